import FoundationEssentials
import Glibc

/// Where `events --since` starts: after a sequence number, or at a time given as an age
/// (`10m`: ten minutes ago) or as a local date and time (`2026-11-23 08:00`, `08:00` today),
/// as `journalctl --since` reads people's times.
struct EventsStart {
    var sequence: Int64?
    var time: Double?

    init(sequence: Int64?, time: Double?) {
        self.sequence = sequence
        self.time = time
    }

    init?(_ text: String, now: Date = Date()) {
        let text = text.trimmingWhitespace()
        if let sequence = Int64(text), sequence >= 0 {
            self.init(sequence: sequence, time: nil)
            return
        }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        if let unit = text.last, let seconds = units[unit], let count = Double(text.dropLast()), count >= 0,
            count.isFinite
        {
            self.init(sequence: nil, time: now.timeIntervalSince1970 - count * seconds)
            return
        }
        guard let date = Self.localDate(text, now: now) else { return nil }
        self.init(sequence: nil, time: date.timeIntervalSince1970)
    }

    /// A local date and time as `journalctl --since` reads it (`2026-11-23 08:00:30`, a `T`
    /// for the space, the seconds or the whole time left out; `08:00` alone is today's), in
    /// the machine's time zone (TZ, /etc/localtime) by mktime(3): Foundation's DateFormatter
    /// is not in FoundationEssentials (issue #37). A date that does not exist is none.
    private static func localDate(_ text: String, now: Date) -> Date? {
        let fields = text.split(omittingEmptySubsequences: false) { $0 == " " || $0 == "T" }
        var parts = tm()
        switch fields.count {
        case 1 where text.contains(":"):
            // A time alone is today's.
            var seconds = time_t(now.timeIntervalSince1970)
            guard localtime_r(&seconds, &parts) != nil, setTime(fields[0], in: &parts) else { return nil }
        case 1:
            guard setDate(fields[0], in: &parts) else { return nil }
        case 2:
            guard setDate(fields[0], in: &parts), setTime(fields[1], in: &parts) else { return nil }
        default:
            return nil
        }
        let asked = (parts.tm_year, parts.tm_mon, parts.tm_mday)
        parts.tm_isdst = -1
        let seconds = mktime(&parts)
        // mktime carries a day past the month's end into the next month: not a date given.
        guard seconds != -1, (parts.tm_year, parts.tm_mon, parts.tm_mday) == asked else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// `YYYY-MM-DD`.
    private static func setDate(_ text: Substring, in parts: inout tm) -> Bool {
        guard let numbers = numbers(text, separator: "-", widths: [4, 2, 2]), numbers.count == 3,
            (1...12).contains(numbers[1]), (1...31).contains(numbers[2])
        else { return false }
        parts.tm_year = Int32(numbers[0] - 1900)
        parts.tm_mon = Int32(numbers[1] - 1)
        parts.tm_mday = Int32(numbers[2])
        return true
    }

    /// `HH:MM` or `HH:MM:SS`.
    private static func setTime(_ text: Substring, in parts: inout tm) -> Bool {
        guard let numbers = numbers(text, separator: ":", widths: [2, 2, 2]), numbers.count >= 2,
            (0...23).contains(numbers[0]), (0...59).contains(numbers[1]),
            (0...60).contains(numbers.count > 2 ? numbers[2] : 0)
        else { return false }
        parts.tm_hour = Int32(numbers[0])
        parts.tm_min = Int32(numbers[1])
        parts.tm_sec = numbers.count > 2 ? Int32(numbers[2]) : 0
        return true
    }

    /// The numbers between `separator`s, each of exactly its width in digits.
    private static func numbers(_ text: Substring, separator: Character, widths: [Int]) -> [Int]? {
        let fields = text.split(separator: separator, omittingEmptySubsequences: false)
        guard fields.count <= widths.count else { return nil }
        var numbers: [Int] = []
        for (field, width) in zip(fields, widths) {
            guard field.count == width, field.allSatisfy(\.isASCII), let number = Int(field) else { return nil }
            numbers.append(number)
        }
        return numbers
    }
}
