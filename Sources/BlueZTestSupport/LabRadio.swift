import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The lab's radio control socket (bluez-lab README, "Radio control channel").
public struct LabRadio: Sendable {
    public init() {}

    public let path = ProcessInfo.processInfo.environment["LAB_RADIO_SOCKET"] ?? "/run/bluez-lab/radio.sock"

    /// Sends one command; throws unless the radio answers OK.
    public func send(_ command: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestEnvironmentError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw TestEnvironmentError("cannot reach the radio at \(path): errno \(errno)") }
        let line = command + "\n"
        _ = line.withCString { write(fd, $0, strlen($0)) }
        var reply: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 && byte != UInt8(ascii: "\n") { reply.append(byte) }
        let text = String(decoding: reply, as: UTF8.self)
        guard text.hasPrefix("OK") else { throw TestEnvironmentError("radio refused '\(command)': \(text)") }
    }

    /// What `scanner` hears from `advertiser`: a fixed RSSI, optionally noisy.
    public func rssi(_ scanner: String, _ advertiser: String, _ dbm: Double, sigma: Double = 0) throws {
        try send("rssi \(scanner) \(advertiser) \(dbm) \(sigma)")
    }

    public func ramp(
        _ scanner: String, _ advertiser: String, from: Double, to: Double, seconds: Double, sigma: Double = 0
    ) throws {
        try send("ramp \(scanner) \(advertiser) \(from) \(to) \(seconds) \(sigma)")
    }

    public func off(_ scanner: String, _ advertiser: String) throws {
        try send("off \(scanner) \(advertiser)")
    }

    /// A stuck receiver (`radioctl wedge`): `hard` survives a power cycle, only `unwedge` clears it.
    public func wedge(_ controller: String, hard: Bool = false) throws {
        try send("wedge \(controller)\(hard ? " hard" : "")")
    }

    public func unwedge(_ controller: String) throws {
        try send("unwedge \(controller)")
    }
}
