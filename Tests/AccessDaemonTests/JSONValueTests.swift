import AccessJSON
import ControlSocket
import Foundation
import Testing

@Suite("JSON on the socket", .timeLimit(.minutes(5)))
struct JSONValueTests {
    @Test func writesWhatFoundationReadsBack() throws {
        let value: JSONValue = [
            "s": "quote \" backslash \\ newline \n tab \t bell \u{7} grüße ✓", "i": -42, "d": 2.5, "whole": 10.0,
            "b": true, "n": nil, "a": [1, "x", [:], []], "o": ["z": 1, "a": 2],
        ]
        let text = value.jsonText
        #expect(!text.contains("\n"))
        #expect(
            text.hasPrefix("{\"a\":[1,\"x\",{},[]],\"b\":true,\"d\":2.5,\"i\":-42,\"n\":null,\"o\":{\"a\":2,\"z\":1}"))
        let back = try JSONValue.parse(text)
        #expect(back["s"] == value["s"])
        #expect(back["whole"]?.number == 10)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
    }

    @Test func randomStringsRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let scalars = (0..<Int.random(in: 0...20, using: &generator)).compactMap { _ in
                Unicode.Scalar(UInt32.random(in: 0...0x2FFF, using: &generator))
            }
            let text = String(String.UnicodeScalarView(scalars))
            let encoded = JSONValue.object(["k": .string(text)]).jsonText
            #expect(try JSONValue.parse(encoded)["k"]?.string == text)
        }
    }

    /// Integers are written digit by digit: the ends of the range and zero.
    @Test func integersAtTheirLimits() throws {
        for value in [Int64.min, Int64.max, 0, -1, 1, 10, -10, 1_000_000_007] {
            #expect(JSONValue.int(value).jsonText == String(value))
            #expect(try JSONValue.parse(JSONValue.int(value).jsonText) == .int(value))
        }
        #expect(JSONValue.double(-3).jsonText == "-3.0")
    }
}
