import AccessCore
import BlueZ
import Crypto

/// One line of the report: a rule of docs/reader-protocol.md, and whether the reader kept it.
struct ConformanceResult: Sendable, Encodable {
    enum Verdict: String, Sendable, Encodable { case pass, fail, skipped }
    var section: String
    var check: String
    var verdict: Verdict
    var detail: String
}

/// The checks of docs/reader-protocol.md §11 against one reader on the air, played from the
/// holder's side through BlueZ. Each check that needs the link opens a connection of its own,
/// as holders do (one exchange per connection, §6).
struct ConformanceSuite {
    let central: BlueZClient
    let adapter: String
    let credential: ConformanceCredential
    var results: [ConformanceResult] = []
    /// The holder's replay guard across the whole run: a reader that repeats a nonce is caught
    /// by the holder as well as by the replay check.
    var replayGuard = ChallengeReplayGuard()

    init(central: BlueZClient, adapter: String, credential: ConformanceCredential) {
        self.central = central
        self.adapter = adapter
        self.credential = credential
    }

    /// Every check, in the order they run.
    static let checks: [(section: String, check: String)] = [
        ("§2", "advertisement"), ("§2", "site tag"), ("§4", "GATT layout"), ("§6", "challenge"),
        ("§5", "access at MTU 23"), ("§5", "access at the link's MTU"), ("§6", "replay refused"), ("§6", "actions"),
        ("§6", "standing challenge"),
        ("§5", "malformed fragment refused"), ("§7", "unknown credential refused"), ("§7", "silent holder timed out"),
    ]

    mutating func run(listen: Duration) async -> [ConformanceResult] {
        if let device = await advertisement(listen: listen), await challengeAndLayout(device) {
            await framing(device)
            await actions(device)
            await standingChallenge(device)
            await malformed(device)
            await unknownCredential(device)
            await timeout(device)
        }
        // What could not run after an earlier failure, said rather than left out.
        let cause = results.last { $0.verdict == .fail }.map { "\($0.check) failed" } ?? "not reached"
        for (section, check) in Self.checks where !results.contains(where: { $0.check == check }) {
            record(section, check, .skipped, cause)
        }
        let order = Dictionary(uniqueKeysWithValues: Self.checks.enumerated().map { ($1.check, $0) })
        return results.sorted { (order[$0.check] ?? 0) < (order[$1.check] ?? 0) }
    }

    mutating func record(
        _ section: String, _ check: String, _ verdict: ConformanceResult.Verdict, _ detail: String
    ) {
        results.append(ConformanceResult(section: section, check: check, verdict: verdict, detail: detail))
    }

    // MARK: §2

    /// Listens for the reader's advertisement; its device path when heard.
    private mutating func advertisement(listen: Duration) async -> String? {
        let deadline = ContinuousClock.now + listen
        var heard: (DeviceState, ReaderAdvertisement)?
        var refused: String?
        while heard == nil, ContinuousClock.now < deadline {
            for device in await central.devices.values where device.adapterPath == adapter {
                guard let payload = device.serviceData[ReaderAdvertisement.serviceDataUUIDString] else { continue }
                do throws(AdvertisementError) {
                    let parsed = try ReaderAdvertisement(serviceData: payload)
                    if parsed.readerID == credential.readerID { heard = (device, parsed) }
                } catch {
                    // Bytes 3…6 are the reader id (§2): say why its advertisement was refused.
                    if payload.count >= 7,
                        payload[3..<7].reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == credential.readerID.rawValue
                    {
                        refused = "\(error)"
                    }
                }
            }
            if heard == nil { try? await Task.sleep(for: .milliseconds(100)) }
        }
        guard let (device, advertisement) = heard else {
            record(
                "§2", "advertisement", .fail,
                refused.map { "refused: \($0)" }
                    ?? "reader \(credential.readerID) not heard in \(listen.components.seconds) s")
            return nil
        }
        let name = device.name.map { "name \"\($0)\"" } ?? "no name"
        record(
            "§2", "advertisement", advertisement.version == 1 ? .pass : .fail,
            "version \(advertisement.version), \(advertisement.kind), reader \(advertisement.readerID), "
                + "tx \(advertisement.txPower) dBm, auto \(advertisement.autoConnectPathLoss) dB, "
                + "manual \(advertisement.manualConnectPathLoss) dB, \(name)")
        record(
            "§2", "site tag", advertisement.siteTag == credential.siteTag ? .pass : .fail,
            advertisement.siteTag == credential.siteTag
                ? "\(advertisement.siteTag), the credential's site"
                : "advertises \(advertisement.siteTag), but the credential's site is \(credential.siteTag)")
        return device.path
    }

    // MARK: §4, §6

    /// The GATT layout and the challenge; false when nothing further can be checked.
    private mutating func challengeAndLayout(_ device: String) async -> Bool {
        let link: ConformanceLink
        do throws(ConformanceFailure) {
            link = try await ConformanceLink.open(central, device: device)
        } catch {
            record("§4", "GATT layout", .fail, error.description)
            return false
        }
        let flags = Set(link.controlPoint.flags)
        let writable = flags.contains("write") || flags.contains("write-without-response")
        record(
            "§4", "GATT layout", writable && flags.contains("notify") ? .pass : .fail,
            "control point \(link.controlPoint.flags.joined(separator: ", ")); link MTU \(link.mtu)")
        let received = await link.receive(within: ProtocolTimeouts().step)
        await link.close()
        guard case .message(.challenge(let challenge)) = received else {
            record("§6", "challenge", .fail, "no challenge within 5 s of subscribing: \(describe(received))")
            return false
        }
        var faults: [String] = []
        if challenge.readerID != credential.readerID { faults.append("names reader \(challenge.readerID)") }
        if challenge.siteTag != credential.siteTag { faults.append("names site \(challenge.siteTag)") }
        if let certificate = challenge.certificate {
            // Version 3: the certificate (§1.1's checks) and the controller's signature.
            var scratch = ChallengeReplayGuard()
            do throws(ProtocolError) {
                _ = try challenge.verify(
                    readerID: credential.readerID, siteTag: credential.siteTag, sitePublicKey: credential.siteKey,
                    certificates: credential.trust, replayGuard: &scratch)
            } catch {
                faults.append("certified challenge refused: \(error)")
            }
            let readers = certificate.readers.map(\.description).joined(separator: ",")
            record(
                "§6", "challenge", faults.isEmpty ? .pass : .fail,
                faults.isEmpty
                    ? "reader and site named; certified (0x08): certificate \(certificate.serial) for readers "
                        + "\(readers) until \(certificate.validUntil), signed by the controller key"
                    : faults.joined(separator: "; "))
            return faults.isEmpty
        }
        if link.isCertified {
            faults.append("asked for version 3 on its readable hold point, it sent a 0x01 challenge")
        }
        if !challenge.isSigned(by: credential.siteKey) {
            faults.append("its signature does not verify with the site key")
        }
        record(
            "§6", "challenge", faults.isEmpty ? .pass : .fail,
            faults.isEmpty ? "reader and site named, signed by the site key" : faults.joined(separator: "; "))
        return faults.isEmpty
    }

    // MARK: §5

    /// Access with the holder's fragments at MTU 23 and at the link's MTU; the reader's own
    /// fragments within its MTU; then the first response replayed on a new connection.
    private mutating func framing(_ device: String) async {
        var first: ConformanceExchange?
        for (label, small) in [("MTU 23", true), ("the link's MTU", false)] {
            guard let link = await open(device, "§5", "access at \(label)") else { continue }
            let mtu = small ? ReaderGATT.minimumMTU : link.mtu
            let exchange = await ConformanceExchange.run(
                on: link, credential: credential,
                presentation: credential.presentation, operation: .access,
                mtu: mtu, replayGuard: &replayGuard)
            let largest = link.largestFragment
            await link.close()
            var detail =
                "\(describe(exchange.outcome)); holder sent \(exchange.written.count) fragment(s) at MTU \(mtu)"
            var passed = if case .decided = exchange.outcome { true } else { false }
            if largest > link.mtu - 3 {
                passed = false
                detail += "; the reader sent a \(largest)-byte fragment over a link of MTU \(link.mtu)"
            }
            record("§5", "access at \(label)", passed ? .pass : .fail, detail)
            if first == nil, passed { first = exchange }
        }
        guard let first else {
            record("§6", "replay refused", .skipped, "needs an access exchange that ended in a decision")
            return
        }
        guard let link = await openAtChallenge(device, "§6", "replay refused") else { return }
        // The response recorded on the first connection, as a relay would replay it.
        var sent = true
        for fragment in first.written {
            do throws(ConformanceFailure) { try await link.write(fragment) } catch { sent = false }
        }
        let answer = await link.receive(within: ProtocolTimeouts().step)
        await link.close()
        switch answer {
        case .message(.error(.badSignature)), .message(.error(.replay)):
            record("§6", "replay refused", .pass, "a recorded response: \(describe(answer))")
        case .dropped where sent:
            record("§6", "replay refused", .pass, "a recorded response: the reader dropped the link")
        default:
            record("§6", "replay refused", .fail, "a recorded response got \(describe(answer)), not error badSignature")
        }
    }

    /// Enumerate: an action list the site signed, or error `unsupportedOperation`.
    private mutating func actions(_ device: String) async {
        guard let link = await open(device, "§6", "actions") else { return }
        let exchange = await ConformanceExchange.run(
            on: link, credential: credential, presentation: credential.presentation,
            operation: .enumerateActions, mtu: link.mtu, replayGuard: &replayGuard)
        await link.close()
        switch exchange.outcome {
        case .actionsListed(let list):
            let signer = link.isCertified ? "the controller key" : "the site key"
            record("§6", "actions", .pass, "\(list.count) action(s) listed, signed by \(signer)")
        case .failed(.operationNotOffered):
            record("§6", "actions", .pass, "no actions: error unsupportedOperation")
        default:
            record("§6", "actions", .fail, describe(exchange.outcome))
        }
    }

    /// Version 2 (§6, standing challenges): asked through the hold point, the reader's
    /// challenge stands and is refreshed within 4 s (with 2 s for the air), and a response
    /// over the challenge before the refresh is still decided. A reader without a hold point
    /// speaks version 1, which is conformant: nothing to check.
    private mutating func standingChallenge(_ device: String) async {
        let check = "standing challenge"
        guard let link = await open(device, "§6", check, standing: true) else { return }
        guard link.isStanding else {
            await link.close()
            record("§6", check, .pass, "no hold point: a version 1 reader, no standing challenges to check")
            return
        }
        var standing = StandingChallenge(
            readerID: credential.readerID, siteTag: credential.siteTag,
            sitePublicKey: credential.siteKey, certificates: credential.trust)
        var nonces: [[UInt8]] = []
        var lastAt = ContinuousClock.now
        var refreshedAfter: Duration?
        while nonces.count < 2 {
            let wait = nonces.isEmpty ? ProtocolTimeouts().step : StandingTimings.refresh + .seconds(2)
            switch await link.nextFragment(by: ContinuousClock.now + wait) {
            case .fragment(let fragment):
                do throws(ProtocolError) {
                    try standing.receive(fragment, at: .zero, replayGuard: &replayGuard)
                } catch {
                    await link.close()
                    record("§6", check, .fail, "\(nonces.isEmpty ? "the challenge" : "the refresh"): \(error)")
                    return
                }
                if let newest = standing.newest?.nonce, newest != nonces.last {
                    if !nonces.isEmpty { refreshedAfter = ContinuousClock.now - lastAt }
                    nonces.append(newest)
                    lastAt = ContinuousClock.now
                }
            case .dropped:
                await link.close()
                record(
                    "§6", check, .fail,
                    nonces.isEmpty ? "the link dropped before a challenge" : "the link dropped before a refresh")
                return
            case .nothingBy:
                await link.close()
                record(
                    "§6", check, .fail,
                    nonces.isEmpty
                        ? "no challenge within 5 s"
                        : "no refresh within \((StandingTimings.refresh + .seconds(2)).components.seconds) s of the challenge"
                )
                return
            }
        }
        // Answer the first challenge, as a holder whose response crossed the refresh would.
        let exchange = await ConformanceExchange.run(
            on: link, credential: credential, presentation: credential.presentation, operation: .access, mtu: link.mtu,
            standing: StandingChallenge.Handover(nonce: nonces[0], signer: standing.newest?.signer),
            replayGuard: &replayGuard)
        await link.close()
        let after = refreshedAfter.map { String(format: "%.1f s", $0.secondsValue) } ?? "?"
        if case .decided = exchange.outcome {
            record(
                "§6", check, .pass,
                "refreshed after \(after); a response over the challenge before it: \(describe(exchange.outcome))")
        } else {
            record(
                "§6", check, .fail,
                "refreshed after \(after); a response over the challenge before it got \(describe(exchange.outcome))")
        }
    }

    // MARK: Helpers

    mutating func open(
        _ device: String, _ section: String, _ check: String,
        standing: Bool = false
    ) async -> ConformanceLink? {
        do throws(ConformanceFailure) {
            return try await ConformanceLink.open(central, device: device, standing: standing)
        } catch {
            record(section, check, .fail, error.description)
            return nil
        }
    }

    /// A new connection and the reader's challenge on it; nil, with the check recorded as
    /// failed (no link) or skipped (no challenge: the challenge check says why), otherwise.
    mutating func openAtChallenge(_ device: String, _ section: String, _ check: String) async
        -> ConformanceLink?
    {
        guard let link = await open(device, section, check) else { return nil }
        let received = await link.receive(within: ProtocolTimeouts().step)
        guard case .message(.challenge) = received else {
            await link.close()
            record(section, check, .skipped, "no challenge: \(describe(received))")
            return nil
        }
        return link
    }

    func describe(_ received: ConformanceLink.Received) -> String {
        switch received {
        case .message(.error(let code)): "error \(code)"
        case .message(.decision(let decision)): "decision \(decision.result.decision)"
        case .message(let message): "message type 0x\(String(message.typeCode, radix: 16))"
        case .broken(let error): "a frame that breaks §5/§6 (\(error))"
        case .dropped: "the link dropped"
        case .nothingWithin(let timeout): "nothing within \(timeout.components.seconds) s"
        }
    }

    func describe(_ outcome: ExchangeOutcome) -> String {
        switch outcome {
        case .decided(let result): "decision \(result.decision) (\(result.mode))"
        case .actionsListed(let list): "\(list.count) action(s) listed"
        case .actionPerformed(let id, let result): "action \(id): \(result.decision)"
        case .failed(.badReaderSignature):
            "the holder refused the reader (a signature that does not verify, another reader or site named, or a nonce seen before)"
        case .failed(.remoteClose): "the reader dropped the link"
        case .failed(let failure): "failed: \(failure)"
        }
    }
}
