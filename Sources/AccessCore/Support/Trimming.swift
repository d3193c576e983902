extension StringProtocol {
    /// The text without leading and trailing whitespace, newlines included. accessd links
    /// FoundationEssentials only (Foundation brings ICU's 34 MB of data: issue #37), which
    /// has no `CharacterSet` and so no `trimmingCharacters(in:)`.
    public func trimmingWhitespace() -> String {
        trimming(\.isWhitespace)
    }

    /// The text without the leading and trailing characters `isTrimmed` picks.
    public func trimming(_ isTrimmed: (Character) -> Bool) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        return String(self[first...last])
    }
}
