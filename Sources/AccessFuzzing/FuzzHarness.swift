/// One harness per parser of outside input (issue #17, docs/testing.md "Fuzzing"). Each
/// takes any bytes, drives the parser as accessd (or readersim) does, and checks what must
/// hold whatever the bytes: no trap, and where a value is accepted, that it means what it
/// says (it re-encodes to the same bytes, an error answer is valid JSON, ...). A broken
/// check traps, which libFuzzer reports as a crash with the input that caused it.
public enum FuzzHarness: String, CaseIterable, Sendable {
    /// Reader service data and RSSI, as BlueZ reports a device, into the reader registry.
    case advertisement
    /// Notified or written fragments into the reassembler, then the message decoder.
    case frames
    /// accessd's side of an exchange (`CredentialSession`) fed a reader's fragments and timers.
    case holderSession = "holder-session"
    /// A reader's side (`ReaderSession`, readersim) fed a holder's fragments and timers.
    case readerSession = "reader-session"
    /// Control socket bytes: lines, JSON-RPC requests, every method's params.
    case controlRequest = "control-request"
    /// A site's HTTP status and body for each call, read as accessd reads them.
    case siteAnswer = "site-answer"
    /// accessd.toml.
    case config
    /// readersim's reader file.
    case readersimConfig = "readersim-config"
    /// Invitation URLs, site hosts, invitation codes, and the signed-request header a site reads.
    case invitation
    /// A message on the MQTT command topic, screened as the bridge screens it.
    case mqttCommand = "mqtt-command"

    public func run(_ bytes: [UInt8]) {
        switch self {
        case .advertisement: AdvertisementHarness.run(bytes)
        case .frames: FramesHarness.run(bytes)
        case .holderSession: HolderSessionHarness.run(bytes)
        case .readerSession: ReaderSessionHarness.run(bytes)
        case .controlRequest: ControlRequestHarness.run(bytes)
        case .siteAnswer: SiteAnswerHarness.run(bytes)
        case .config: ConfigurationHarness.run(bytes)
        case .readersimConfig: ConfigurationHarness.runReadersim(bytes)
        case .invitation: InvitationHarness.run(bytes)
        case .mqttCommand: ControlRequestHarness.runMQTTCommand(bytes)
        }
    }
}

/// Reads a fuzzer's bytes as a sequence of choices and chunks, so that one input can be a
/// whole conversation (which fragment, then which timer, ...). Running out yields zeros
/// and empty chunks: every input is a valid script.
struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isEmpty: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A chunk whose length is the next byte.
    mutating func chunk() -> [UInt8] {
        let count = min(Int(byte()), bytes.count - offset)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Eight bytes, big endian, as any `Int64` (the width D-Bus can carry).
    mutating func int64() -> Int64 {
        (0..<8).reduce(Int64(0)) { value, _ in value << 8 | Int64(byte()) }
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }
}

/// A property that must hold for every input; a broken one is a finding.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fatalError("fuzz property broken: \(message())", file: file, line: line) }
}
