import AccessCore
import Foundation
import ReaderSimulation

extension ReaderSession.Report {
    /// The report as readersim's JSON line fields.
    func printed(by reader: isolated SimulatedReader) {
        var fields: [String: Any] = ["credential": credential ?? NSNull()]
        if let operation {
            fields["operation"] = switch operation {
            case .access: "access"
            case .enumerateActions: "actions.list"
            case let .performAction(id): "actions.perform \(id)"
            }
        }
        switch outcome {
        case let .decided(result):
            fields["outcome"] = "decided"
            fields["decision"] = result.decision.description
            fields["granted"] = result.decision.isGranted
        case let .actionsListed(actions):
            fields["outcome"] = "actionsListed"
            fields["actions"] = actions.map { ["id": Int($0.id), "name": $0.name] }
        case let .actionPerformed(id, result):
            fields["outcome"] = "actionPerformed"
            fields["action"] = Int(id)
            fields["decision"] = result.decision.description
            fields["granted"] = result.decision.isGranted
        case let .refused(code):
            fields["outcome"] = "refused"
            fields["error"] = "\(code)"
        case let .failed(error):
            fields["outcome"] = "failed"
            fields["error"] = "\(error)"
        case .disconnected:
            fields["outcome"] = "disconnected"
        }
        reader.printReport(fields)
    }
}
