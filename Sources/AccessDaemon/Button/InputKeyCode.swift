/// A key of a Linux input device as `[button] key` names it: `KEY_ENTER`, `BTN_0`, or the
/// code as a number. The names are those of the kernel's `input-event-codes.h` for the keys a
/// kiosk's push-button or keypad is likely to send; any other key is given by its number
/// (`evtest` prints both).
public struct InputKeyCode: Hashable, Sendable, CustomStringConvertible {
    public let code: UInt16

    /// The kernel's `KEY_MAX`.
    public static let maximum: UInt16 = 0x2FF

    public init?(_ text: String) {
        if let number = UInt16(text), number > 0, number <= Self.maximum {
            code = number
        } else if let named = Self.names[text] {
            code = named
        } else {
            return nil
        }
    }

    public var description: String {
        Self.names.first { $0.value == code }.map { "\($0.key) (\(code))" } ?? "key \(code)"
    }

    static let names: [String: UInt16] = {
        var table: [String: UInt16] = [
            "KEY_ESC": 1, "KEY_ENTER": 28, "KEY_SPACE": 57, "KEY_KPENTER": 96, "KEY_OPEN": 134, "KEY_PROG1": 148,
            "KEY_PROG2": 149, "KEY_PROG3": 202, "KEY_PROG4": 203, "KEY_OK": 0x160, "KEY_SELECT": 0x161,
            "KEY_F11": 87, "KEY_F12": 88, "BTN_LEFT": 0x110, "BTN_RIGHT": 0x111, "BTN_MIDDLE": 0x112,
            "BTN_TRIGGER": 0x120, "BTN_SOUTH": 0x130, "KEY_0": 11,
        ]
        for (offset, code) in (59...68).enumerated() { table["KEY_F\(offset + 1)"] = UInt16(code) }
        for digit in 1...9 { table["KEY_\(digit)"] = UInt16(digit + 1) }
        for digit in 0...9 { table["BTN_\(digit)"] = UInt16(0x100 + digit) }
        let rows: [(String, UInt16)] = [("QWERTYUIOP", 16), ("ASDFGHJKL", 30), ("ZXCVBNM", 44)]
        for (letters, first) in rows {
            for (offset, letter) in letters.enumerated() { table["KEY_\(letter)"] = first + UInt16(offset) }
        }
        return table
    }()
}
