import AccessCore
import AccessJSON
import AccessStore
import FoundationEssentials
import SiteContract

/// What accessd makes of a site's answers (docs/site-api.md): a body's bytes to a checked
/// value or a typed refusal. Pure, apart from the clock it is given: `SiteClient` moves the
/// bytes, this reads them, and accessfuzz's `site-answer` harness feeds it any bytes at all.
public enum SiteAnswers {
    /// What one HTTP answer means for the call.
    public enum Reading<Answer>: Sendable where Answer: Sendable {
        case answer(Answer)
        /// `auth.expired` on a first attempt with a believable `serverTime`: sign again on
        /// the site's clock.
        case retry(clockOffset: Int64)
    }

    /// Deepest `data` an item may carry: deeper objects cost every later listing time for no
    /// use a site has shown (docs/site-api.md §4.2).
    static let maximumDataDepth = 16
    /// Withdrawn certificate serials in one page: a week's withdrawals (certificates live a
    /// week at most) at any site this kiosk is likely to serve.
    static let maximumWithdrawnCertificates = 1_024

    /// A body as the decoder may see it: nil when empty; deep text costs the decoder
    /// milliseconds per level, so it is refused before it sees it.
    public static func body(_ bytes: some Collection<UInt8>) throws(SiteError) -> Data? {
        if bytes.isEmpty { return nil }
        guard !JSONNesting.exceeds(JSONNesting.limit, in: bytes) else {
            throw .malformedAnswer("nested deeper than \(JSONNesting.limit) levels")
        }
        return Data(bytes)
    }

    /// A status and body as `Answer`, a retry on the site's clock, or the site's refusal.
    public static func read<Answer: Decodable & Sendable>(
        _ type: Answer.Type, status: Int, body: Data?, firstAttempt: Bool, now: Int64
    ) throws(SiteError) -> Reading<Answer> {
        if (200..<300).contains(status) {
            // A 204 has no body; the only answer that may be empty is one with no fields.
            guard let decoded = try? JSONDecoder().decode(Answer.self, from: body ?? Data("{}".utf8)) else {
                throw .malformedAnswer("HTTP \(status) with a body that is not a \(Answer.self)")
            }
            return .answer(decoded)
        }
        guard let body, let refusal = try? JSONDecoder().decode(SiteErrorAnswer.self, from: body) else {
            throw .malformedAnswer("HTTP \(status) without an error body")
        }
        if refusal.error.code == "auth.expired", firstAttempt, let serverTime = refusal.error.serverTime,
            let offset = clockOffset(serverTime: serverTime, now: now)
        {
            return .retry(clockOffset: offset)
        }
        throw .refused(status: status, code: refusal.error.code, message: refusal.error.message ?? "")
    }

    /// How far the site's clock is from ours, or nil when `serverTime` is not a time a site's
    /// clock can show (more than ten years from ours): following it could only fail, and the
    /// arithmetic on arbitrary values overflows.
    static func clockOffset(serverTime: Int64, now: Int64) -> Int64? {
        let tenYears: Int64 = 10 * 366 * 86_400
        guard serverTime > now - tenYears, serverTime < now + tenYears else { return nil }
        return serverTime - now
    }

    public static func registration(_ answer: RegistrationAnswer) throws(SiteError) -> SiteClient.Registration {
        guard let id = CredentialID(answer.credential.id), let cardholder = answer.credential.cardholderName,
            let secondFactor = answer.credential.secondFactor,
            let tag = SiteText.siteTag(answer.site.tag), let siteKey = SiteText.publicKey(answer.site.publicKey)
        else { throw .malformedAnswer("the registration answer lacks or garbles a field") }
        return SiteClient.Registration(
            credentialID: id, state: answer.credential.state, cardholderName: cardholder,
            secondFactor: secondFactor, siteName: answer.site.name, siteTag: tag,
            sitePublicKey: siteKey)
    }

    public static func itemPage(_ answer: ItemPageAnswer, credential id: CredentialID) throws(SiteError)
        -> SiteClient.ItemPage
    {
        let items = try answer.items.map { item throws(SiteError) in try stored(item, credential: id) }
        var withdrawn: Set<UInt64>?
        if let serials = answer.withdrawnCertificates {
            guard serials.count <= maximumWithdrawnCertificates else {
                throw .malformedAnswer("more than \(maximumWithdrawnCertificates) withdrawn certificates")
            }
            var parsed: Set<UInt64> = []
            for serial in serials {
                guard serial.utf8.count <= 20, serial.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                    let value = UInt64(serial)
                else { throw .malformedAnswer("a withdrawn certificate's serial is not a decimal number") }
                parsed.insert(value)
            }
            withdrawn = parsed
        }
        return SiteClient.ItemPage(
            cursor: answer.cursor, items: items, removed: answer.removed, more: answer.more ?? false,
            withdrawnCertificates: withdrawn)
    }

    private static func stored(_ item: SiteItem, credential id: CredentialID) throws(SiteError) -> StoredItem {
        guard !item.id.isEmpty, item.id.utf8.count <= 128 else {
            throw .malformedAnswer("an item id must be 1 to 128 bytes")
        }
        var stored = StoredItem(id: item.id, credentialID: id, type: item.type, name: item.name, state: item.state)
        // A window's ends are Unix seconds a clock can show, in order.
        let times: ClosedRange<Int64> = 0...(1 << 40)
        if let from = item.content.validFrom, !times.contains(from) {
            throw .malformedAnswer("an item's validFrom is not a time")
        }
        if let until = item.content.validUntil, !times.contains(until) {
            throw .malformedAnswer("an item's validUntil is not a time")
        }
        if let from = item.content.validFrom, let until = item.content.validUntil, until <= from {
            throw .malformedAnswer("an item's validUntil is not after its validFrom")
        }
        stored.validFrom = item.content.validFrom.map(Double.init)
        stored.validUntil = item.content.validUntil.map(Double.init)
        if item.type == "aperio" {
            guard let aperio = item.content.aperio, let identifier = aperio.identifierBytes, let key = aperio.keyBytes,
                let tag = item.content.siteTag.flatMap(SiteText.siteTag)
            else {
                throw .malformedAnswer("an aperio item lacks its identifier, key or site tag")
            }
            stored.aperioIdentifier = identifier
            stored.aperioKey = key
            stored.siteTag = tag
        } else if let data = item.content.data, data != .null {
            guard case .object = data else { throw .malformedAnswer("an item's data is not an object") }
            guard data.depth <= maximumDataDepth else {
                throw .malformedAnswer("an item's data is nested deeper than \(maximumDataDepth)")
            }
            stored.data = data.jsonText
        }
        return stored
    }
}
