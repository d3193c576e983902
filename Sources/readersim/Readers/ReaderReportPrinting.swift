import AccessCore
import Foundation
import ReaderSimulation

extension ReaderSession.Report {
    /// The report as readersim's JSON line fields.
    func printed(by reader: isolated SimulatedReader) {
        var fields: [String: Any] = ["credential": credential ?? NSNull()]
        if let operation {
            fields["operation"] =
                switch operation {
                case .access: "access"
                case .enumerateActions: "actions.list"
                case .performAction(let id): "actions.perform \(id)"
                }
        }
        switch outcome {
        case .decided(let result):
            fields["outcome"] = "decided"
            fields["decision"] = result.decision.description
            fields["granted"] = result.decision.isGranted
        case .actionsListed(let actions):
            fields["outcome"] = "actionsListed"
            fields["actions"] = actions.map { ["id": Int($0.id), "name": $0.name] }
        case .actionPerformed(let id, let result):
            fields["outcome"] = "actionPerformed"
            fields["action"] = Int(id)
            fields["decision"] = result.decision.description
            fields["granted"] = result.decision.isGranted
        case .refused(let code):
            fields["outcome"] = "refused"
            fields["error"] = "\(code)"
        case .failed(let error):
            fields["outcome"] = "failed"
            fields["error"] = "\(error)"
        case .disconnected:
            fields["outcome"] = "disconnected"
        }
        reader.printReport(fields)
    }
}
