import ControlSocket
import NIOConcurrencyHelpers

/// Where the MQTT bridge stands, for `status.get`: written by the bridge, read without
/// suspending.
final class MQTTProgress: Sendable {
    private let entry: NIOLockedValueBox<MQTTStatus>

    init(broker: String, topic: String) {
        entry = NIOLockedValueBox(MQTTStatus(state: .connecting, broker: broker, topic: topic, through: 0, backlog: 0))
    }

    func update(_ change: (inout MQTTStatus) -> Void) {
        entry.withLockedValue { change(&$0) }
    }

    var status: MQTTStatus { entry.withLockedValue { $0 } }
}
