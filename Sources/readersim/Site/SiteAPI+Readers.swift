import AccessCore
import Foundation
import SiteContract

/// §7 reader provisioning: a page of the credential and Aperio changes after the reader's
/// cursor, with the site's signing key, to an enrolled reader controller only.
extension SiteAPI {
    func provisioning(_ request: SiteRequest, now: Double) throws -> SiteResponse {
        guard let header = request.headers["authorization"],
            let authorization = SiteRequestAuthorization(headerValue: header)
        else {
            return .error(401, "auth.missing", "an ACR1 Authorization header is required")
        }
        guard let keyID = authorization.readerKeyID, let reader = try database.reader(keyID), !reader.removed,
            authorization.verifies(
                method: request.method, pathAndQuery: request.target, body: request.body,
                key: reader.publicKey)
        else { return .error(401, "auth.invalid", "unknown reader key or bad signature") }
        if let refusal = try freshness(authorization, now: now) { return refusal }

        let query = SiteQuery(request.target)
        let cursor: Int64
        let wait: Double
        switch (query.cursor(latest: try database.latestSequence()), query.wait(default: 0)) {
        case (.ok(let c), .ok(let w)): (cursor, wait) = (c, w)
        case (.refused(let refusal), _), (_, .refused(let refusal)): return refusal
        }
        let database = self.database
        let pageSize = self.pageSize
        let after = cursor
        let holds = wait > 0
        let site = try database.site()
        let siteFields = ProvisionedSite(
            name: site.name, tag: site.tag.description,
            publicKey: SiteText.base64(site.key.publicKey),
            signingKey: givesSiteKey ? Base64.encode(Array(site.key.rawRepresentation)) : nil)
        // The controller's certificates as of this call (a held call keeps them: it ends
        // within a minute, long before half of any certificate's validity).
        let certificates = try database.certificates(
            for: reader, site: site, validity: certificateValidity, now: now
        ).map { Base64.encode($0.encoded) }
        @Sendable func page() throws -> SiteResponse? {
            // Again at every look, a held call's too: a key withdrawn while the call waits
            // gets no page, not even the changes made after the withdrawal.
            guard let current = try database.reader(keyID), !current.removed else {
                return .error(401, "auth.invalid", "this reader key was withdrawn")
            }
            let changes = try database.readerChanges(after: after, limit: pageSize + 1)
            let taken = changes.prefix(pageSize)
            var answer = ProvisioningPage(
                site: siteFields, cursor: String(taken.last?.sequence ?? after), credentials: [],
                aperio: [], removed: ProvisioningRemovals(), more: changes.count > pageSize,
                certificates: certificates)
            for change in taken {
                switch change {
                case .credential(let row, _) where row.deleted:
                    answer.removed.credentials.append(row.id.description)
                case .credential(let row, _):
                    answer.credentials.append(
                        ProvisionedCredential(
                            id: row.id.description, publicKey: SiteText.base64(row.publicKey),
                            secondFactorKey: row.secondFactorKey.map(SiteText.base64), state: row.state))
                case .aperio(let item) where item.removed:
                    answer.removed.aperio.append(item.id)
                case .aperio(let item):
                    guard let content = try? JSONDecoder().decode(SiteItemContent.self, from: Data(item.payload.utf8)),
                        let fields = content.aperio
                    else { continue }
                    answer.aperio.append(
                        ProvisionedAperio(
                            id: item.id, credential: item.credentialID.description,
                            state: item.state, identifier: fields.identifier,
                            key: fields.key, siteTag: content.siteTag, validFrom: content.validFrom,
                            validUntil: content.validUntil))
                }
            }
            return taken.isEmpty && holds ? nil : .json(200, answer)
        }
        if let answer = try page() { return answer }
        // Nothing new: hold the call (like §4.4) until a change or the end of the wait.
        var response = SiteResponse.json(
            200,
            ProvisioningPage(
                site: siteFields, cursor: String(cursor), credentials: [],
                aperio: [], removed: ProvisioningRemovals(), more: false, certificates: certificates))
        response.waitUntil = now + wait
        response.recheck = { (try? page()) ?? nil }
        return response
    }
}
