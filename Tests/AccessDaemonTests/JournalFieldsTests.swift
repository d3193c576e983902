import AccessJSON
import ControlSocket
import Testing

@testable import AccessDaemon

@Suite(.timeLimit(.minutes(5)))
/// What the journal gets for each event, and the reload's view of a changed file.
struct JournalFieldsTests {
    /// docs/operations.md lists these; they must never change.
    @Test func messageIDsAreThoseDocumented() {
        #expect(JournalFields.messageID(kind: "some.future") == JournalFields.messageID(kind: "some.future"))
        #expect(JournalFields.messageID(kind: "access.completed") == "ae9d9db7bf47a25a26314f9b29adc8ad")
        #expect(JournalFields.messageID(kind: "sdk.state") == "1a07d4fbf7f908481719fb322589b9e6")
        #expect(JournalFields.messageID(kind: "credentials.changed") == "802c59d2ea909380341f71c9e4c28da9")
    }

    @Test func aDecisionIsANoticeWithItsFields() {
        var answer = ExchangeAnswer(
            outcome: "decided", reader: "00002A01", origin: "manual", decision: "granted", granted: true)
        answer.credential = "4b1f0d3e-2a01-4c6e-9d8b-0123456789ab"
        let level = JournalFields.level(answer.event)
        let metadata = JournalFields.metadata(answer.event, sequence: 7)
        #expect(level == .notice)
        let fields = Dictionary(uniqueKeysWithValues: metadata.map { (JournalFields.name(for: $0.key), "\($0.value)") })
        #expect(fields["READER_ID"] == "00002A01")
        #expect(fields["DECISION"] == "granted")
        #expect(fields["CREDENTIAL_ID"] == "4b1f0d3e-2a01-4c6e-9d8b-0123456789ab")
        #expect(fields["MESSAGE_ID"] == "ae9d9db7bf47a25a26314f9b29adc8ad")
        #expect(fields["ACCESSD_SEQ"] == "7")
        #expect(fields["ACCESSD_ORIGIN"] == "manual")
    }

    @Test func stateAndSightingsHaveTheirOwnFieldsAndLevels() {
        let stateEvent = SdkStateEvent(isScanning: true, states: ["errorNoCredentials"], featureErrors: []).event
        let state = JournalFields.metadata(stateEvent, sequence: 1)
        #expect(JournalFields.level(stateEvent) == .notice)
        #expect(state["sdkState"] == "errorNoCredentials")
        let sighting = ControlEvent.readerUpdated(EventSamples.reader)
        #expect(JournalFields.level(sighting) == .debug)
        #expect(JournalFields.metadata(sighting, sequence: 2)["reader"] == "00002A01")
        let gone = ReaderUnavailableEvent(reader: "00002A01").event
        #expect(JournalFields.metadata(gone, sequence: 3)["reader"] == "00002A01")
        let failed = FeatureStateEvent(feature: "cloudConnection", state: .failed, error: "site.unreachable").event
        #expect(JournalFields.level(failed) == .warning)
        #expect(JournalFields.metadata(failed, sequence: 4)["error"] == "site.unreachable")
        #expect(JournalFields.name(for: "retry-in") == "ACCESSD_RETRY_IN")
        let registered = JournalFields.metadata(
            CredentialsChangedEvent(reason: .registered, credential: "4b1f0d3e").event,
            sequence: 5)
        #expect(registered["credential"] == "4b1f0d3e")
        #expect(registered["reason"] == "registered")
    }

    /// Issue #17: a site name carrying `\n<0>` was written as a second, forged log line.
    @Test func controlCharactersCannotStartALineOfTheirOwn() {
        let text = JournalLogHandler.text(
            "site \"x\n<0>accessd[critical]: forged\" refused",
            [(key: "error", value: .string("a\r\n<3>b\u{1b}[31m"))])
        #expect(!text.contains("\n") && !text.contains("\r") && !text.contains("\u{1b}"))
        #expect(text == #"site "x\n<0>accessd[critical]: forged" refused error=a\r\n<3>b\x1b[31m"#)
    }
}
