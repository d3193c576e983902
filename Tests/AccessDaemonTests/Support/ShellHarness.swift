import AccessCore
import AccessJSON
import AccessStore
import BlueZ
import BlueZTestSupport
import Crypto
import Foundation
import Logging

@testable import AccessDaemon
@testable import ControlSocket

/// The daemon's services in this process over the fake central: no bus, no binary, a real
/// SQLite store in a temporary directory. Requests go through the control API's table as the
/// socket's would; events are read back from the journal.
final class ShellHarness: @unchecked Sendable {
    static let siteTag = SiteTag(0x5117_E001)
    static let readerID = ReaderID(0x2A01)
    static let readerAddress = "00:BB:01:00:00:00"
    static let readerPath = "/org/bluez/hci0/dev_00_BB_01_00_00_00"
    static let credentialID = CredentialID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!
    static let pin = "482916"

    let central = FakeCentral()
    let directory: String
    let store: AccessStore
    let site: SiteClient
    let daemon: AccessDaemonServices
    let siteKey = P256.Signing.PrivateKey()
    let credentialKey = P256.Signing.PrivateKey()
    let secondFactorKey = P256.Signing.PrivateKey()
    private var running: Task<Void, Never>?
    private var socket: Task<Void, Never>?
    private var nextClient: UInt64 = 0

    /// `secondFactor`: the credential's second factor is sealed under `pin` (with `pinSet`;
    /// without, its site asks for one and it has none, as a site that registered it without
    /// the key leaves it).
    init(
        secondFactor: Bool = false, pinSet: Bool = true, credentialState: CredentialState = .active,
        clock: any Clock<Duration> = ContinuousClock(),
        siteURL: String = "http://127.0.0.1:9", withdrawnCertificates: Set<UInt64> = [],
        configure: (inout AccessdConfiguration) -> Void = { _ in }
    ) throws {
        directory = NSTemporaryDirectory() + "accessd-shell-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try AccessStore(directory: directory + "/state", dataKey: .success(.forTests))
        var configuration = AccessdConfiguration()
        configuration.stateDirectory = directory + "/state"
        // Off unless a test turns it on: the fake readers advertise when told (DaemonHarness).
        configuration.radioRecovery = false
        configure(&configuration)
        var sealed: SealedSecondFactorKey?
        if secondFactor && pinSet {
            var generator = SystemRandomNumberGenerator()
            // scrypt at N = 2^10, not the standard 2^15: the daemon opens a key with the
            // parameters it was sealed with, and at the standard cost (unoptimized in a debug
            // build) sealing and PIN attempts were a fifth of the host suite's CPU, enough to
            // starve other tests past their waits on a 2-core machine.
            sealed = try SealedSecondFactorKey.seal(
                secondFactorKey, pin: Self.pin, credential: Self.credentialID,
                parameters: .init(log2N: 10, r: 8, p: 1), using: &generator)
        }
        let credential = Credential(
            id: Self.credentialID, siteTag: Self.siteTag, cardholderName: "Ada Lovelace",
            kind: .mobile, state: credentialState, sitePublicKey: siteKey.publicKey,
            signingKey: credentialKey, sealedSecondFactor: sealed, secondFactorEnabled: secondFactor)
        try store.insertCredential(
            StoredCredential(
                credential: credential, siteName: "Head office",
                siteURL: siteURL, deviceName: "kiosk", registeredAt: 0))
        if !withdrawnCertificates.isEmpty {
            // As an item sync that listed them left the store.
            try store.applyItemSync(
                credential: Self.credentialID, upserted: [], removed: [], cursor: "0",
                withdrawnCertificates: withdrawnCertificates, at: 0)
        }
        site = try SiteClient(caFile: nil, timeout: .seconds(5))
        var logger = Logger(label: "shell-test")
        logger.logLevel = .critical
        daemon = try AccessDaemonServices(
            configuration: configuration, store: store, central: central, site: site,
            logLevel: LogLevelSetting(.critical), logger: logger, clock: clock)
    }

    /// The reader the credential above is for.
    func readerConfiguration(
        secondFactor: Bool = false, policy: ReaderSession.DecisionPolicy = .fromSite,
        readerID: ReaderID = readerID
    ) -> ReaderSession.Configuration {
        ReaderSession.Configuration(
            readerID: readerID, siteTag: Self.siteTag, siteKey: siteKey, policy: policy,
            secondFactorRequired: secondFactor,
            credentials: [
                .init(
                    id: Self.credentialID, publicKey: credentialKey.publicKey,
                    secondFactorPublicKey: secondFactorKey.publicKey)
            ])
    }

    /// A version 3 reader's: it signs with a controller key of its own under a certificate
    /// from the site key (valid from an hour ago until `validFor` seconds from now: negative
    /// for one that expired), and its site key is a stranger's.
    func certifiedReaderConfiguration(
        readerID: ReaderID = readerID, validFor: Int = 86_400
    ) throws -> ReaderSession.Configuration {
        var configuration = readerConfiguration(readerID: readerID)
        configuration.siteKey = P256.Signing.PrivateKey()
        let controller = P256.Signing.PrivateKey()
        let from = UInt32(Date().timeIntervalSince1970) - 3_600
        let certificate = try ControllerCertificate.issue(
            siteKey: siteKey, siteTag: Self.siteTag, serial: 1, validFrom: from,
            validUntil: UInt32(Int(from) + 3_600 + validFor),
            controllerKey: controller.publicKey, readers: [readerID])
        configuration.controller = ControllerIdentity(key: controller, certificate: certificate)
        return configuration
    }

    /// Starts the services with one powered adapter, and waits until discovery runs.
    func start() async throws {
        await central.addAdapter("hci0")
        runServices()
        // A readiness wait, not a measure: generous, for a 2-core machine running the whole
        // suite at once (30 s was exceeded there, in CI).
        try await waitUntil("discovery started") {
            await self.central.callCount("StartDiscovery") > 0
        }
    }

    /// The daemon's services, running until `stop()`, with whatever adapters the test gave the
    /// fake central (`start()` adds hci0 first and waits for discovery).
    func runServices() {
        let services = daemon.services
        running = Task {
            await withTaskGroup(of: Void.self) { group in
                for service in services { group.addTask { try? await service.run() } }
            }
        }
    }

    /// The control API on a real Unix socket, for the real `accessctl` against the fake
    /// central (every client an admin); its path.
    func serveSocket() async throws -> String {
        let path = directory + "/control.sock"
        var logger = Logger(label: "shell-socket")
        logger.logLevel = .critical
        let server = ControlServer(
            path: path, group: nil, eventLimit: 1024, logger: logger, handler: daemon.control,
            roleOf: { _ in .admin })
        socket = Task { try? await server.run() }
        try await waitUntil("the socket listens") { FileManager.default.fileExists(atPath: path) }
        return path
    }

    func stop() async {
        socket?.cancel()
        await socket?.value
        running?.cancel()
        await running?.value
        await site.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The reader advertising at `rssi` (tx power −59 dBm: −70 is 11 dB of path loss, within
    /// auto range 20), attached behind the fake central.
    /// Another reader (`id`, `address`) is heard the same way.
    func readerAdvertises(
        _ reader: FakeReader?, rssi: Int = -70, times: Int = 3, siteTag: SiteTag = siteTag,
        id: ReaderID = readerID, address: String = readerAddress,
        flags: ReaderFlags = [.autoConnectEnabled, .manualConnectEnabled], every interval: Duration? = nil
    ) async throws {
        let advertisement = ReaderAdvertisement(
            kind: .gallagherStyle, flags: flags, readerID: id,
            txPower: -59, autoConnectPathLoss: 20, manualConnectPathLoss: 40, siteTag: siteTag)
        for _ in 0..<times {
            let path = await central.advertise(
                address: address, rssi: rssi,
                serviceData: [ReaderAdvertisement.serviceDataUUIDString: advertisement.serviceData])
            if let reader { await central.attach(reader, to: path) }
            // The range filter follows an approach over time: a walk-up is paced, not a burst.
            if let interval { try await Task.sleep(for: interval) }
        }
        try await waitUntil("reader heard") {
            try self.events("reader.updated").contains { $0["id"]?.string == id.description }
        }
    }

    /// Starts, a reader asking for a second factor advertises, and a manual access to it
    /// waits at the PIN prompt: the access's answer to come, and the prompt's request id.
    func accessWaitingForAPin() async throws -> (Task<Result<JSONValue, RPCError>, Never>, String) {
        try await start()
        try await readerAdvertises(FakeReader(readerConfiguration(secondFactor: true)))
        let answer = Task { await self.call("access.request", ["reader": "2A01"]) }
        let prompt = try await waitForEvent("secondFactor.required")
        guard let request = prompt["request"]?.string else {
            throw TestEnvironmentError("prompt without request: \(prompt)")
        }
        return (answer, request)
    }

    func call(_ method: String, _ params: JSONValue = .object([:]), role: Role = .admin) async -> Result<
        JSONValue, RPCError
    > {
        nextClient += 1
        let client = ControlClient(id: nextClient, role: role, uid: 0, pid: 0, eventLimit: 1024)
        return await daemon.control.handle(RPCRequest(id: .int(1), method: method, params: params), from: client)
    }

    /// The journal's events of `kind`, oldest first (their `data`).
    func events(_ kind: String) throws -> [JSONValue] {
        try store.events(after: 0, kinds: [kind]).map { try JSONValue.parse($0.data) }
    }

    func waitForEvent(
        _ kind: String, timeout: Duration = readinessCeiling,
        where predicate: (JSONValue) -> Bool = { _ in true }
    ) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = try events(kind).first(where: predicate) { return match }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestEnvironmentError("no \(kind) event within \(timeout): \(try events(kind))")
    }

    func waitUntil(_ what: String, timeout: Duration = readinessCeiling, _ condition: () async throws -> Bool)
        async throws
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestEnvironmentError("\(what): not within \(timeout)")
    }

    var failedPinAttempts: Int { (try? store.credentials().first?.failedPinAttempts) ?? -1 }
}

extension ShellHarness {
    /// A store of its own (no daemon) holding an active credential like the harness's, for
    /// tests of the credential book alone; the directory to remove afterwards.
    static func standaloneStore(registeredAt: Double, lastSyncAt: Double? = nil) throws -> (AccessStore, String) {
        let directory = NSTemporaryDirectory() + "accessd-book-" + UUID().uuidString
        let store = try AccessStore(directory: directory, dataKey: .success(.forTests))
        let key = P256.Signing.PrivateKey()
        let credential = Credential(
            id: credentialID, siteTag: siteTag, cardholderName: "Ada", kind: .mobile, state: .active,
            sitePublicKey: key.publicKey, signingKey: key, sealedSecondFactor: nil,
            secondFactorEnabled: false)
        try store.insertCredential(
            StoredCredential(
                credential: credential, siteName: "S", siteURL: "http://127.0.0.1:9",
                deviceName: "k", registeredAt: registeredAt, lastSyncAt: lastSyncAt))
        return (store, directory)
    }
}
