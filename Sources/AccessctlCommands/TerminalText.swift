import FoundationEssentials
import Glibc

/// Text in the terminal's character set. Where the locale is not UTF-8 (`LC_ALL=C`, a serial
/// console, a minimal container) the few symbols accessctl prints become ASCII, as
/// systemctl's do; names from outside (a cardholder's) are left as they are.
enum TerminalText {
    static let isUTF8: Bool = {
        setlocale(LC_CTYPE, "")
        return String(cString: nl_langinfo(nl_item(CODESET))) == "UTF-8"
    }()

    private static let ascii: [(String, String)] = [
        ("…", "..."), ("→", "->"), ("●", "*"), ("±", "+/-"), ("–", "-"), ("—", "-"), ("≤", "<="), ("≥", ">="),
    ]

    static func fitted(_ text: String) -> String {
        guard !isUTF8, text.utf8.contains(where: { $0 >= 0x80 }) else { return text }
        return ascii.reduce(text) { $0.replacing($1.0, with: $1.1) }
    }
}

/// Every `print` in accessctl goes through `TerminalText` (this shadows `Swift.print` in the
/// module, so no output path can forget it; printError and printLine call it too).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    Swift.print(TerminalText.fitted(items.map { "\($0)" }.joined(separator: separator)), terminator: terminator)
}
