import Foundation

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
        let text = text.trimmingCharacters(in: .whitespaces)
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

    private static func localDate(_ text: String, now: Date) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        for format in [
            "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd",
        ] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        // A time alone is today's.
        for format in ["HH:mm:ss", "HH:mm"] {
            formatter.dateFormat = format
            guard let time = formatter.date(from: text) else { continue }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = .current
            let parts = calendar.dateComponents([.hour, .minute, .second], from: time)
            return calendar.date(
                bySettingHour: parts.hour ?? 0, minute: parts.minute ?? 0, second: parts.second ?? 0, of: now)
        }
        return nil
    }
}
