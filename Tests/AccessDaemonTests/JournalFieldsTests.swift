@testable import AccessDaemon
import AccessJSON
import Testing

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
        let data: JSONValue = [
            "reader": "00002A01", "origin": "manual", "outcome": "decision", "decision": "granted", "granted": true,
            "credential": "4b1f0d3e-2a01-4c6e-9d8b-0123456789ab",
        ]
        let level = JournalFields.level(kind: "access.completed", data: data)
        let metadata = JournalFields.metadata(kind: "access.completed", sequence: 7, data: data)
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
        let stateData: JSONValue = ["isScanning": true, "states": ["ok"]]
        let stateLevel = JournalFields.level(kind: "sdk.state", data: stateData)
        let state = JournalFields.metadata(kind: "sdk.state", sequence: 1, data: stateData)
        #expect(stateLevel == .notice)
        #expect(state["sdkState"] == "ok")
        let sightingLevel = JournalFields.level(kind: "reader.updated", data: ["id": "00002A01"])
        let sighting = JournalFields.metadata(kind: "reader.updated", sequence: 2, data: ["id": "00002A01"])
        #expect(sightingLevel == .debug)
        #expect(sighting["reader"] == "00002A01")
        let failedLevel = JournalFields.level(kind: "feature.state", data: ["feature": "cloudConnection", "state": "failed"])
        #expect(failedLevel == .warning)
        #expect(JournalFields.name(for: "retry-in") == "ACCESSD_RETRY_IN")
        let registered = JournalFields.metadata(kind: "credentials.changed", sequence: 4,
                                                data: ["reason": "registered", "id": "4b1f0d3e"])
        #expect(registered["credential"] == "4b1f0d3e")
    }

    /// Issue #17: a site name carrying `\n<0>` was written as a second, forged log line.
    @Test func controlCharactersCannotStartALineOfTheirOwn() {
        let text = JournalLogHandler.text("site \"x\n<0>accessd[critical]: forged\" refused",
                                          [(key: "error", value: .string("a\r\n<3>b\u{1b}[31m"))])
        #expect(!text.contains("\n") && !text.contains("\r") && !text.contains("\u{1b}"))
        #expect(text == #"site "x\n<0>accessd[critical]: forged" refused error=a\r\n<3>b\x1b[31m"#)
    }
}
