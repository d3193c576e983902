/// `org.bluez.GattCharacteristic1`: a GATT characteristic, remote (accessd's client) or
/// exported (readersim's server) (doc/org.bluez.GattCharacteristic.rst).
public enum GattCharacteristic1 {
    public static let interface = "org.bluez.GattCharacteristic1"
}

/// A remote GATT characteristic (`org.bluez.GattCharacteristic1`) in BlueZ's tree.
public struct GattCharacteristicState: Hashable, Sendable {
    public var path: String
    public var uuid: String
    public var servicePath: String
    /// "read", "write", "write-without-response", "notify", ...
    public var flags: [String]
    public var notifying: Bool
    /// The ATT MTU BlueZ negotiated for this characteristic's link (BlueZ ≥ 5.62).
    public var mtu: Int?

    public init(path: String, properties: [String: DBusValue]) {
        self.path = path
        self.uuid = (properties["UUID"]?.string ?? "").lowercased()
        self.servicePath = properties["Service"]?.string ?? DeviceState.adapterPath(of: path)
        self.flags = properties["Flags"]?.strings ?? []
        self.notifying = properties["Notifying"]?.bool ?? false
        self.mtu = properties["MTU"]?.integer
    }

    mutating func apply(_ changed: [String: DBusValue]) {
        if let value = changed["Notifying"]?.bool { notifying = value }
        if let value = changed["MTU"]?.integer { mtu = value }
        if let value = changed["Flags"]?.strings { flags = value }
    }
}

/// How a value is written to a characteristic.
public enum GattWriteType: String, Sendable {
    /// ATT Write Request: the reader acknowledges each write.
    case withResponse = "request"
    /// ATT Write Command: no acknowledgement, lower latency.
    case withoutResponse = "command"
}

extension BlueZClient {
    /// The path of a characteristic of a connected device, by service and characteristic UUID.
    public func characteristic(device: String, service: String, characteristic: String) -> GattCharacteristicState? {
        let serviceUUID = service.lowercased()
        let characteristicUUID = characteristic.lowercased()
        let services = Set(gattServices.values.filter { $0.devicePath == device && $0.uuid == serviceUUID }.map(\.path))
        return gattCharacteristics.values
            .filter { services.contains($0.servicePath) && $0.uuid == characteristicUUID }
            .min { $0.path < $1.path }
    }

    public nonisolated func readValue(characteristic: String, timeout: Duration = .seconds(5)) async throws(BlueZError)
        -> [UInt8]
    {
        let reply = try await call(
            characteristic, GattCharacteristic1.interface, "ReadValue", [.properties([:])],
            timeout: timeout)
        guard let value = reply.first?.bytes else { throw .invalidArguments("ReadValue returned \(reply)") }
        return value
    }

    public nonisolated func writeValue(
        characteristic: String, _ value: [UInt8], type: GattWriteType = .withResponse,
        timeout: Duration = .seconds(5)
    ) async throws(BlueZError) {
        _ = try await call(
            characteristic, GattCharacteristic1.interface, "WriteValue",
            [.bytes(value), .properties(["type": .string(type.rawValue)])], timeout: timeout)
    }

    /// Enables notifications and returns them as a stream, which ends when the
    /// characteristic (or its device, or bluetoothd) goes away. Subscribe before the peer
    /// can send: the stream exists before StartNotify is called.
    public func notifications(characteristic: String) async throws(BlueZError) -> AsyncStream<[UInt8]> {
        guard gattCharacteristics[characteristic] != nil else { throw .doesNotExist }
        let (stream, continuation) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = nextWaiter
        nextWaiter += 1
        notificationSubscribers[characteristic, default: [:]][id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(characteristic: characteristic, id: id) }
        }
        do {
            _ = try await call(characteristic, GattCharacteristic1.interface, "StartNotify")
        } catch {
            notificationSubscribers[characteristic]?[id] = nil
            continuation.finish()
            throw error
        }
        return stream
    }

    private func unsubscribe(characteristic: String, id: UInt64) async {
        guard notificationSubscribers[characteristic]?.removeValue(forKey: id) != nil else { return }
        if notificationSubscribers[characteristic]?.isEmpty == true {
            notificationSubscribers[characteristic] = nil
            _ = try? await call(characteristic, GattCharacteristic1.interface, "StopNotify")
        }
    }
}
