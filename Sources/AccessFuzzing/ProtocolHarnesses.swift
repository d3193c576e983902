import AccessCore

/// Service data and RSSI as BlueZ reports a device, through the checks accessd makes
/// (`ReaderSightings`), into the registry, with time moving on between sightings.
enum AdvertisementHarness {
    static func run(_ bytes: [UInt8]) {
        // The whole input once as legacy advertising data (readersim's and a holder's view).
        if let parsed = try? ReaderAdvertisement(advertisingData: bytes) {
            require(
                (try? ReaderAdvertisement(serviceData: parsed.serviceData)) == parsed, "advertising data re-decodes")
        }
        var input = FuzzInput(bytes)
        var registry = ReaderRegistry()
        var now = Timestamp.zero
        var readers: Set<ReaderID> = []
        while !input.isEmpty {
            let payload = input.chunk()
            // Mostly a byte's worth of RSSI; sometimes any value D-Bus can carry.
            let rssi = input.byte() & 1 == 0 ? Int(Int8(bitPattern: input.byte())) : Int(input.int64())
            now = Timestamp(nanoseconds: now.nanoseconds + Int64(input.byte()) * 50_000_000)
            let advertisement: ReaderAdvertisement
            do {
                advertisement = try ReaderAdvertisement(serviceData: payload)
            } catch {
                require(!error.description.isEmpty, "a refusal says why")
                continue
            }
            require(advertisement.serviceData == payload, "service data re-encodes to the same bytes")
            guard ReaderRegistry.measurableRSSI.contains(rssi) else { continue }
            let observation = registry.observe(
                advertisement, rssi: rssi, address: DeviceAddress(rawValue: 0xBB01_0000_0000),
                name: nil, at: now)
            require(observation.measuredPathLoss.isFinite, "path loss is a number")
            readers.insert(advertisement.readerID)
            _ = registry.expire(at: now)
            require(registry.count <= readers.count, "one entry per reader id")
        }
    }
}

/// Fragments into the reassembler; whole messages into the decoder.
enum FramesHarness {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var reassembler = FrameReassembler()
        while !input.isEmpty {
            let fragment = input.chunk()
            let message: [UInt8]?
            do {
                message = try reassembler.feed(fragment)
            } catch {
                // accessd ends the exchange on a framing error; the next one starts afresh.
                reassembler = FrameReassembler()
                continue
            }
            guard let message else { continue }
            require(message.count <= Fragmentation.maximumMessageLength, "a message within the limit")
            if let decoded = try? ProtocolMessage(decoding: message) {
                require(decoded.encoded == message, "a decoded message re-encodes to the same bytes")
            }
        }
    }
}

/// The steps of a session script: a fragment, a timer, an MTU, a second factor.
private enum SessionStep {
    case fragment([UInt8])
    case timer
    case mtu(Int)
    case secondFactor(Bool)

    static func next(_ input: inout FuzzInput) -> SessionStep {
        switch input.byte() % 8 {
        case 5: .timer
        case 6: .mtu(Int(input.byte()) << 8 | Int(input.byte()))
        case 7: .secondFactor(input.byte() & 1 == 0)
        default: .fragment(input.chunk())
        }
    }
}

/// accessd's side of an exchange, fed what a reader (or anyone in radio range) sends.
enum HolderSessionHarness {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let setup = input.byte()
        let operation: ExchangeOperation =
            switch setup % 3 {
            case 0: .access
            case 1: .enumerateActions
            default: .performAction(Int8(bitPattern: input.byte()))
            }
        let presentation: CredentialSession.Presentation =
            setup & 0x80 == 0
            ? .mobile(FuzzKeys.credentialID, FuzzKeys.credential) : .aperio(FuzzKeys.aperio)
        // Version 3 too: an hour into the day of §9's controller certificate, so a seed from
        // the certified vectors reaches a decision.
        var session = CredentialSession(
            readerID: FuzzKeys.readerID, siteTag: FuzzKeys.siteTag,
            sitePublicKey: FuzzKeys.site.publicKey, presentation: presentation,
            operation: operation,
            certificates: CertificateTrust(
                chain: SiteKeyChain(registered: FuzzKeys.site.publicKey, siteTag: FuzzKeys.siteTag, statements: []),
                now: 1_796_086_800))
        var replayGuard = ChallengeReplayGuard()
        var finishes = 0
        func count(_ actions: [CredentialSession.Action]) {
            for case .finish in actions { finishes += 1 }
            require(finishes <= 1, "one outcome per exchange")
        }
        count(session.handle(.connected, replayGuard: &replayGuard))
        while !input.isEmpty {
            let actions: [CredentialSession.Action] =
                switch SessionStep.next(&input) {
                case .fragment(let fragment): session.handle(.fragmentReceived(fragment), replayGuard: &replayGuard)
                case .timer: session.handle(.timerFired, replayGuard: &replayGuard)
                case .mtu(let mtu): session.handle(.mtuChanged(mtu), replayGuard: &replayGuard)
                case .secondFactor(let given):
                    session.handle(
                        given
                            ? .secondFactorKey(FuzzKeys.secondFactor)
                            : .secondFactorUnavailable(.secondFactorLockedOut),
                        replayGuard: &replayGuard)
                }
            count(actions)
            for case .send(let fragments) in actions {
                require(
                    fragments.allSatisfy { $0.count <= max(session.mtu, ReaderGATT.minimumMTU) - 3 },
                    "fragments fit the MTU")
            }
        }
        count(session.handle(.disconnected, replayGuard: &replayGuard))
        require(finishes == 1 && session.isFinished, "every exchange ends with exactly one outcome")
    }
}

/// A reader's side (readersim), fed what a holder sends.
enum ReaderSessionHarness {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let setup = input.byte()
        let configuration = ReaderSession.Configuration(
            readerID: FuzzKeys.readerID, siteTag: FuzzKeys.siteTag,
            kind: setup & 0x40 == 0 ? .gallagherStyle : .aperioStyle,
            siteKey: FuzzKeys.site, secondFactorRequired: setup & 0x80 != 0,
            actions: [ReaderAction(id: 1, name: "Arm"), ReaderAction(id: 2, name: "Disarm")],
            actionOutcomes: [2: .deniedLockdown],
            credentials: [
                .init(
                    id: FuzzKeys.credentialID, publicKey: FuzzKeys.credential.publicKey,
                    secondFactorPublicKey: FuzzKeys.secondFactor.publicKey)
            ],
            aperioCredentials: [.init(secret: FuzzKeys.aperio)])
        var session = ReaderSession(configuration: configuration)
        var finishes = 0
        var refreshes: UInt8 = 0
        func count(_ actions: [ReaderSession.Action]) {
            for case .finish in actions { finishes += 1 }
            require(finishes <= 1, "one report per exchange")
            for case .refreshChallenge in actions {
                // As readersim does: a fresh nonce for the refreshed standing challenge.
                refreshes &+= 1
                count(session.handle(.freshNonce(FuzzKeys.nonce.map { $0 ^ refreshes })))
            }
        }
        count(
            session.handle(
                .connected(
                    nonce: FuzzKeys.nonce, secondFactorNonce: FuzzKeys.secondFactorNonce,
                    standing: setup & 0x20 != 0)))
        while !input.isEmpty {
            switch SessionStep.next(&input) {
            case .fragment(let fragment): count(session.handle(.fragmentReceived(fragment)))
            case .timer: count(session.handle(.timerFired))
            case .mtu(let mtu): count(session.handle(.mtuChanged(mtu)))
            case .secondFactor: continue
            }
        }
        count(session.handle(.disconnected))
        require(finishes == 1, "every exchange ends with exactly one report")
    }
}
