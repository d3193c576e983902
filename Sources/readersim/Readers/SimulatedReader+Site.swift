import AccessCore
import Crypto
import Foundation
import ReaderSimulation
import SiteContract

extension SimulatedReader {
    /// The reader's view of the site, as its last provisioning page left it (docs/site-api.md
    /// §7): the site's key and tag, the credentials and the Aperio items. Taken afresh at
    /// every connection, so a revocation the site sent, or an item's window closing, applies
    /// to the next exchange.
    func siteConfiguration() -> ReaderSession.Configuration? {
        let provisioned = provisioning.current
        guard let site = provisioned.site else { return nil }
        let key = configuration.fault == .wrongKey ? P256.Signing.PrivateKey() : site.signingKey
        let policy: ReaderSession.DecisionPolicy =
            switch configuration.decision {
            case .site: .fromSite
            case .grant: .grant
            case .deny(let decision): .deny(decision)
            }
        return ReaderSession.Configuration(
            readerID: configuration.id, siteTag: site.tag, kind: configuration.kind, siteKey: key, policy: policy,
            mode: configuration.mode, secondFactorRequired: configuration.secondFactorRequired,
            actions: configuration.actions, actionOutcomes: configuration.actionOutcomes,
            credentials: provisioned.credentialRecords,
            aperioCredentials: provisioned.aperioRecords(at: Int64(Date().timeIntervalSince1970)),
            timeouts: ProtocolTimeouts(secondFactor: configuration.secondFactorWait),
            // A spoofed reader (`wrong-key`) has no certificate: it signs everything with its key.
            controller: configuration.protocolVersion >= 3 && configuration.fault != .wrongKey
                ? provisioned.controllerIdentity(key: provisioning.key, reader: configuration.id) : nil)
    }
}
