import FoundationEssentials

/// The text of a second-factor prompt, from `[prompts] second_factor`: a template where
/// `{reader}` is the reader's advertised name (its id when it has none), `{readerId}` its id and
/// `{site}` the credential's site name, as the SDK's localization gives
/// `authenticationDetails(readerName)`. Anything else in braces stays as written.
enum PromptText {
    static let placeholders = ["{reader}", "{readerId}", "{site}"]

    static func render(_ template: String, readerName: String?, readerID: String, siteName: String?) -> String {
        let name = readerName.flatMap { $0.isEmpty ? nil : $0 } ?? readerID
        return
            template
            .replacing("{readerId}", with: readerID)
            .replacing("{reader}", with: name)
            .replacing("{site}", with: siteName ?? "the site")
    }
}
