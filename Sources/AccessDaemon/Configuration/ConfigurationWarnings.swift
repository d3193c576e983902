import AccessCore
import FoundationEssentials

/// What a file accessd accepts may still get wrong: former names, and features that are
/// synced but cannot do what their name suggests on Linux. Said by `--check-config` and at
/// start (stderr, so the journal has it), never refused: a running kiosk keeps its file.
public enum ConfigurationWarnings {
    /// The warnings of the file at `path` (none when it is absent or unreadable: loading says so).
    public static func of(path: String) -> [ConfigurationError] {
        guard let bytes = try? ConfigurationFile.read(path),
            let text = try? ConfigurationSyntax.text(of: bytes),
            let document = try? ConfigurationSyntax.parse(text)
        else { return [] }
        return of(document, file: path)
    }

    static func of(_ document: ConfigurationSyntax.Document, file: String) -> [ConfigurationError] {
        var warnings: [ConfigurationError] = []
        if let entry = document.sections["range"]?["sensitivity"], case .string(let name) = entry.value,
            let sensitivity = ConnectionSensitivity.formerNames[name]
        {
            warnings.append(
                ConfigurationError(
                    file: file, line: entry.line,
                    reason: """
                        [range] sensitivity "\(name)" is a former name: write "\(sensitivity.rawValue)" \
                        (\(sensitivity.pathLossOffset) dB, the SDK's names: veryLow -5, low -2.5, normal 0)
                        """))
        }
        if let entry = document.sections["features"]?["enabled"], case .array(let values) = entry.value {
            for case .string(let feature) in values where ["salto", "digitalId"].contains(feature) {
                warnings.append(
                    ConfigurationError(
                        file: file, line: entry.line,
                        reason: """
                            [features] \(feature): its items are synced and listed (accessctl items), but \
                            \(feature == "salto" ? "opening Salto doors needs Salto's own SDK" : "showing a digital ID is the site app's"), \
                            which accessd does not include
                            """))
            }
        }
        return warnings
    }
}
