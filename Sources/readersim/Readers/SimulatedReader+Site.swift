import AccessCore
import Crypto
import Foundation
import ReaderSimulation
import SiteContract

extension SimulatedReader {
    /// The reader's view of the site: its key and tag, the credentials and Aperio items.
    func siteConfiguration() throws -> ReaderSession.Configuration {
        let siteData = try site.site()
        let key = configuration.fault == .wrongKey ? P256.Signing.PrivateKey() : siteData.key
        // One read per connection: the credentials serve both the mobile records and the
        // states of the Aperio items' owners.
        let rows = try site.credentials()
        let credentials = rows.filter { !$0.deleted }.map {
            ReaderSession.CredentialRecord(id: $0.id, publicKey: $0.publicKey, secondFactorPublicKey: $0.secondFactorKey,
                                           state: $0.state)
        }
        var aperio: [ReaderSession.AperioRecord] = []
        let owners = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for item in try site.allItems() where item.type == "aperio" {
            guard let content = try? JSONDecoder().decode(SiteItemContent.self, from: Data(item.payload.utf8)),
                  let secret = content.aperio?.secret else { continue }
            // An item is only as good as the credential it was pushed to.
            let ownerState = owners[item.credentialID]?.state ?? .revoked
            let state: CredentialState = ownerState == .active ? item.state : ownerState
            aperio.append(ReaderSession.AperioRecord(secret: secret, state: state))
        }
        let policy: ReaderSession.DecisionPolicy = switch configuration.decision {
        case .site: .fromSite
        case .grant: .grant
        case let .deny(decision): .deny(decision)
        }
        return ReaderSession.Configuration(
            readerID: configuration.id, siteTag: siteData.tag, kind: configuration.kind, siteKey: key, policy: policy,
            mode: configuration.mode, secondFactorRequired: configuration.secondFactorRequired,
            actions: configuration.actions, actionOutcomes: configuration.actionOutcomes, credentials: credentials,
            aperioCredentials: aperio)
    }
}
