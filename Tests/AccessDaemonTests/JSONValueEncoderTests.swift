import AccessJSON
import Foundation
import Testing

@testable import ControlSocket

/// The contract's direct encoder gives what JSONEncoder and a parse back would, only faster.
@Suite("Encoding contract values into JSONValue", .timeLimit(.minutes(5)))
struct JSONValueEncoderTests {
    func viaFoundation<T: Encodable>(_ value: T) throws -> JSONValue {
        try JSONValue.parse(String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
    }

    @Test func agreesWithJSONEncoder() throws {
        let status = StatusAnswer(
            version: "0.1.0", protocolVersion: 1, isScanning: true, states: ["errorNoCredentials"],
            featureErrors: [], scanningEnabled: true, automaticAccessEnabled: false, adapter: nil,
            bluetoothServicePresent: true, readerCount: 2, credentialCount: 0,
            usableCredentialCount: 0, refusedAdvertisements: 7, lastSequence: 42, uptimeSeconds: 9)
        #expect(try JSONValue(encoding: status) == viaFoundation(status))
        let exchange = ExchangeAnswer(
            outcome: "actionsListed", reader: "2A01", origin: "manual",
            actions: [ActionInfo(id: 1, name: "Arm", type: "arm")],
            timings: ExchangeTimings(
                detectionMs: nil, connectMs: 12, resolveMs: 0.5,
                exchangeMs: 150, totalMs: 162.5))
        // Whole doubles are written 12.0 directly and 12 by JSONEncoder: the same number once read.
        #expect(try JSONValue.parse(JSONValue(encoding: exchange).jsonText) == viaFoundation(exchange))
        let item = ItemInfo(
            id: "i1", credential: "c", type: "salto", name: "Door", state: "active", site: nil,
            data: ["floors": [1, 2], "note": "x", "nested": ["deep": true]])
        #expect(try JSONValue(encoding: item) == viaFoundation(item))
        #expect(try JSONValue(encoding: [Int8(-3), Int8(4)]) == [-3, 4])
        #expect(try JSONValue(encoding: Float(0.5)) == 0.5)
        #expect(try JSONValue(encoding: ["a"]) == ["a"])
        // The generic scalars (an optional's payload, an array's elements) take the direct path.
        #expect(try JSONValue(encoding: [Int?.some(3), nil]) == [3, nil])
        #expect(try JSONValue(encoding: [[true], [false]]) == [[true], [false]])
        #expect(try JSONValue(encoding: [Int64.min, Int64.max]) == [.int(.min), .int(.max)])
        #expect(try JSONValue(encoding: ["k": [1.5]]) == ["k": [1.5]])
    }
}
