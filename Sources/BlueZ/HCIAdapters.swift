import CBlueZ

#if canImport(Glibc)
    import Glibc
#endif

/// A local HCI adapter as the kernel lists it (libbluetooth), independent of bluetoothd.
public struct HCIAdapter: Hashable, Sendable {
    public var index: Int
    public var name: String
    public var address: BluetoothAddress
    public var isUp: Bool
    /// `HCI_VIRTUAL` 0, `HCI_USB` 1, `HCI_UART` 3, ... (BlueZ's hci.h).
    public var busType: Int
}

/// Why the kernel's adapter list could not be read.
public enum HCIError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kernel has no Bluetooth (no AF_BLUETOOTH): a container or a kernel built without it.
    case kernelHasNoBluetooth
    /// Refused, typically by `RestrictAddressFamilies=` or missing capabilities.
    case permissionDenied
    case system(errno: Int32)

    public var description: String {
        switch self {
        case .kernelHasNoBluetooth: "the kernel has no Bluetooth support (AF_BLUETOOTH unavailable)"
        case .permissionDenied: "not permitted to open an HCI socket"
        case .system(let code): "HCI socket: \(String(cString: strerror(code)))"
        }
    }
}

public enum HCIAdapters {
    /// Lists the kernel's HCI adapters.
    public static func list() throws(HCIError) -> [HCIAdapter] {
        var buffer = [cbz_hci_adapter](repeating: cbz_hci_adapter(), count: 16)
        let count = cbz_hci_list(&buffer, Int32(buffer.count))
        if count < 0 {
            switch -count {
            case EAFNOSUPPORT, EPROTONOSUPPORT: throw .kernelHasNoBluetooth
            case EPERM, EACCES: throw .permissionDenied
            default: throw .system(errno: -count)
            }
        }
        return buffer.prefix(Int(count)).map { raw in
            var copy = raw
            let name = withUnsafeBytes(of: &copy.name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            return HCIAdapter(
                index: Int(raw.index), name: name, address: BluetoothAddress(bytes: raw.address),
                isUp: raw.up != 0, busType: Int(raw.bus_type))
        }
    }
}
