import Testing

@testable import BlueZ

@Suite("Bluetooth addresses through libbluetooth", .timeLimit(.minutes(5)))
struct BluetoothAddressTests {
    @Test func parsesAndFormatsInDisplayOrder() throws {
        let address = try #require(BluetoothAddress("00:bb:01:02:03:0a"))
        #expect(address.bytes == (0x00, 0xBB, 0x01, 0x02, 0x03, 0x0A))
        #expect(address.description == "00:BB:01:02:03:0A")
    }

    @Test(arguments: [
        "", "00:BB:01:02:03", "00:BB:01:02:03:0A:11", "00-BB-01-02-03-0A", "0G:BB:01:02:03:0A",
        "000:B:01:02:03:0A", " 00:BB:01:02:03:0A",
    ])
    func refusesMalformedText(_ text: String) {
        #expect(BluetoothAddress(text) == nil)
    }

    @Test func libdbusVersionIsReported() {
        let parts = LibDBus.version.split(separator: ".")
        #expect(parts.count == 3)
        #expect(Int(parts[0]) == 1)
    }
}
