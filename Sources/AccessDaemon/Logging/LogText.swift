/// Text from outside (site names, error codes, reader names) made safe for a log line.
enum LogText {
    /// Control characters as escapes (`\n`, `\r`, `\t`, `\x1b`), so a value can never start a
    /// line of its own; everything else as it is.
    static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return text }
        var output = ""
        output.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: output += "\\n"
            case 0x0D: output += "\\r"
            case 0x09: output += "\\t"
            case 0..<0x20, 0x7F:
                let hex = String(scalar.value, radix: 16)
                output += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
