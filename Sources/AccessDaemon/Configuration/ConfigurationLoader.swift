import AccessCore
import FoundationEssentials

/// Reads accessd.toml. Refuses what it does not understand (unknown sections and keys,
/// wrong types, out-of-range values) with the file, the line and the reason, so a typo is
/// found at start and not at the first door.
public enum ConfigurationLoader {
    /// Loads `path`; a missing file means the built-in defaults when `mayBeAbsent`.
    public static func load(path: String, mayBeAbsent: Bool) throws(ConfigurationError) -> AccessdConfiguration {
        guard FileManager.default.fileExists(atPath: path) else {
            if mayBeAbsent { return AccessdConfiguration() }
            throw ConfigurationError(file: path, line: nil, reason: "no such file")
        }
        return try parse(bytes: ConfigurationFile.read(path), file: path)
    }

    /// A file's bytes: UTF-8 (a bad byte is refused with its line), then `parse`.
    public static func parse(bytes: [UInt8], file: String) throws(ConfigurationError) -> AccessdConfiguration {
        let text: String
        do {
            text = try ConfigurationSyntax.text(of: bytes)
        } catch {
            throw ConfigurationError(file: file, line: error.line, reason: error.reason)
        }
        return try parse(text, file: file)
    }

    public static func parse(_ text: String, file: String) throws(ConfigurationError) -> AccessdConfiguration {
        let document: ConfigurationSyntax.Document
        do {
            document = try ConfigurationSyntax.parse(text)
        } catch {
            throw ConfigurationError(file: file, line: error.line, reason: error.reason)
        }
        return try ConfigurationReader(document: document, file: file).read()
    }
}

/// Reads a parsed file's keys as `ConfigurationKeys` declares them, each refusal with the
/// file, the line and the reason.
struct ConfigurationReader {
    let document: ConfigurationSyntax.Document
    let file: String

    func fail(_ section: String, _ key: String?, _ reason: String) -> ConfigurationError {
        let line = key.flatMap { document.sections[section]?[$0]?.line } ?? document.sectionLines[section]
        return ConfigurationError(file: file, line: line, reason: reason)
    }

    func read() throws(ConfigurationError) -> AccessdConfiguration {
        let sections = ConfigurationKeys.sections
        if let stray = document.sections[""]?.min(by: { $0.value.line < $1.value.line }) {
            throw ConfigurationError(
                file: file, line: stray.value.line,
                reason:
                    "unknown section or key '\(stray.key)' (every setting belongs in a section: \(sections.keys.sorted().joined(separator: ", ")))"
            )
        }
        for (name, keys) in document.sections where !name.isEmpty {
            let known = name.hasPrefix(Self.readerTablePrefix) ? Self.readerRuleKeys : sections[name]
            guard let known else {
                throw ConfigurationError(
                    file: file, line: document.sectionLines[name],
                    reason:
                        "unknown section or key '\(name)' (sections: \(sections.keys.sorted().joined(separator: ", ")))"
                )
            }
            for (key, entry) in keys where !known.contains(key) {
                throw ConfigurationError(
                    file: file, line: entry.line,
                    reason: "unknown key '\(key)' in [\(name)] (known: \(known.joined(separator: ", ")))")
            }
        }
        var configuration = AccessdConfiguration()
        for key in ConfigurationKeys.all {
            try key.read?(&configuration, self)
        }
        return configuration
    }

    func value(_ section: String, _ key: String) -> ConfigurationSyntax.Value? {
        document.sections[section]?[key]?.value
    }

    func string(_ section: String, _ key: String) throws(ConfigurationError) -> String? {
        guard let raw = value(section, key) else { return nil }
        guard case .string(let text) = raw else { throw fail(section, key, "\(key) must be a string") }
        return text
    }

    func bool(_ section: String, _ key: String) throws(ConfigurationError) -> Bool? {
        guard let raw = value(section, key) else { return nil }
        guard case .bool(let flag) = raw else { throw fail(section, key, "\(key) must be true or false") }
        return flag
    }

    func int(_ section: String, _ key: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let raw = value(section, key) else { return nil }
        guard case .integer(let number) = raw else { throw fail(section, key, "\(key) must be a whole number") }
        guard range.contains(number) else {
            throw fail(section, key, "\(key) must be within \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    func double(_ section: String, _ key: String, _ range: ClosedRange<Double>) throws(ConfigurationError)
        -> Double?
    {
        guard let raw = value(section, key) else { return nil }
        let number: Double
        switch raw {
        case .integer(let whole): number = Double(whole)
        case .float(let decimal): number = decimal
        default: throw fail(section, key, "\(key) must be a number")
        }
        guard range.contains(number) else {
            throw fail(section, key, "\(key) must be within \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// A duration in seconds (a whole or decimal number).
    func seconds(_ section: String, _ key: String, _ range: ClosedRange<Double>) throws(ConfigurationError)
        -> Duration?
    {
        guard let number = try double(section, key, range) else { return nil }
        return .milliseconds(Int64((number * 1000).rounded()))
    }
}
