import Foundation
import Testing

@testable import BlueZ

@Suite("HCI adapters through libbluetooth", .timeLimit(.minutes(5)))
struct HCIAdaptersTests {
    /// On a kernel without Bluetooth (this project's build machines) the answer is a typed
    /// error; where the kernel has it (the lab VM) it is the list /sys/class/bluetooth shows.
    @Test func listMatchesWhatTheKernelHas() throws {
        let sysfs = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/bluetooth")) ?? []
        // Protocol 1: BTPROTO_HCI.
        let socketWorks = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), 1)
        if socketWorks >= 0 { close(socketWorks) }
        if socketWorks < 0 && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT) {
            #expect(throws: HCIError.kernelHasNoBluetooth) { try HCIAdapters.list() }
            return
        }
        let adapters = try HCIAdapters.list()
        #expect(adapters.map(\.name).sorted() == sysfs.filter { $0.hasPrefix("hci") && !$0.contains(":") }.sorted())
    }
}
