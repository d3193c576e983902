import BoundedFile
import ControlSocket
import FoundationEssentials
import Logging
import NIOConcurrencyHelpers

/// Zero-touch enrolment (issue #34, docs/fleet.md "Enrolling a hundred kiosks"): an invitation
/// URL that a provisioning tool (Ansible, cloud-init) left in `[site] invitation_file` is
/// registered when accessd starts, as `accessctl credentials register URL` would, with no
/// person at the kiosk. Registered: the file is removed (the code in it is spent). Refused for
/// good (used, expired, unknown, malformed, a second factor that needs a person, a credential
/// for that site already held): the file is renamed to FILE.failed and not tried again. The
/// site cannot be asked (unreachable, timed out, failing) or the file cannot be read: tried
/// again after 5 s, doubling to 5 min. Each outcome is in `status.get`'s `enrolment` and the
/// journal.
final class InvitationEnrolment: Sendable {
    /// The most of a file read: an invitation URL is well under 300 bytes.
    static let maximumFileSize = 4096
    static let firstRetry: Duration = .seconds(5)
    static let longestRetry: Duration = .seconds(300)

    let path: String
    private let admin: CredentialAdmin
    private let clock: any Clock<Duration>
    private let logger: Logger
    private let state = NIOLockedValueBox<(status: EnrolmentStatus, retryAt: Date?)?>(nil)

    init(path: String, admin: CredentialAdmin, clock: any Clock<Duration>, logger: Logger) {
        self.path = path
        self.admin = admin
        self.clock = clock
        self.logger = logger
    }

    /// For `status.get`: nil when there was no file at start.
    var status: EnrolmentStatus? {
        state.withLockedValue { state in
            guard var status = state?.status else { return nil }
            if let retryAt = state?.retryAt {
                status.retryInSeconds = max(0, Int(retryAt.timeIntervalSinceNow.rounded(.up)))
            }
            return status
        }
    }

    /// Until the file is registered or refused (at once when there is none); cancellable.
    func run() async {
        guard FileManager.default.fileExists(atPath: path) else { return }
        var delay = Self.firstRetry
        while !Task.isCancelled {
            set(EnrolmentStatus(file: path, state: .registering))
            let outcome: Outcome
            switch readInvitation() {
            case .url(let url): outcome = await register(url)
            case .unusable(let failure): outcome = failure
            }
            switch outcome {
            case .registered(let id):
                try? FileManager.default.removeItem(atPath: path)
                logger.notice(
                    "enrolled from the invitation file", metadata: ["file": "\(path)", "credential": "\(id)"])
                set(EnrolmentStatus(file: path, state: .registered, credential: id))
                return
            case .refused(let error, let message):
                let kept = path + ".failed"
                try? FileManager.default.removeItem(atPath: kept)
                try? FileManager.default.moveItem(atPath: path, toPath: kept)
                logger.error(
                    "the invitation file was refused; not trying it again",
                    metadata: ["file": "\(path)", "kept": "\(kept)", "error": "\(error)", "reason": "\(message)"])
                set(EnrolmentStatus(file: path, state: .failed, error: error, message: message))
                return
            case .later(let error, let message):
                logger.warning(
                    "the invitation file cannot be registered yet; trying again",
                    metadata: [
                        "file": "\(path)", "error": "\(error)", "reason": "\(message)",
                        "retry_in": "\(delay.components.seconds) s",
                    ])
                set(
                    EnrolmentStatus(file: path, state: .retrying, error: error, message: message),
                    retryAt: Date().addingTimeInterval(Double(delay.components.seconds)))
                do {
                    try await clock.sleep(for: delay)
                } catch {
                    return
                }
                delay = min(delay * 2, Self.longestRetry)
            }
        }
    }

    private enum Outcome {
        case registered(String)
        case refused(String, String)
        case later(String, String)
    }

    private enum Reading {
        case url(String)
        case unusable(Outcome)
    }

    private func set(_ status: EnrolmentStatus, retryAt: Date? = nil) {
        state.withLockedValue { $0 = (status, retryAt) }
    }

    /// The file's first line that is not empty or a `#` comment. A file that cannot be read
    /// (accessd is not its owner, it went away) may be fixed: later; one that is too long,
    /// not UTF-8 or empty never becomes an invitation: refused.
    private func readInvitation() -> Reading {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: Self.maximumFileSize)
        } catch {
            switch error {
            case .unreadable:
                return .unusable(
                    .later(
                        "invitation.unreadable",
                        "cannot read \(path): it must be a file owned by accessd (mode 0600)"))
            case .notARegularFile(let what):
                return .unusable(
                    .refused("invitation.malformed", "\(path) is not an invitation URL (it is \(what))"))
            case .tooLarge:
                return .unusable(
                    .refused(
                        "invitation.malformed",
                        "\(path) is not an invitation URL (more than \(Self.maximumFileSize) bytes)"))
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .unusable(
                .refused("invitation.malformed", "\(path) is not an invitation URL (not UTF-8 text)"))
        }
        let line = text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }
            .first { !$0.isEmpty && !$0.hasPrefix("#") }
        guard let line else { return .unusable(.refused("invitation.malformed", "\(path) holds no invitation URL")) }
        return .url(line)
    }

    private func register(_ url: String) async -> Outcome {
        switch await admin.register(RegisterParams(url: url), uid: CredentialAdmin.invitationFileUID) {
        case .success(let info): return .registered(info.id)
        case .failure(let error):
            let code =
                error.data?["error"]?.string
                ?? (error.code == RPCError.invalidParamsCode ? "invalidParams" : "internal")
            return Self.isForGood(code) ? .refused(code, error.message) : .later(code, error.message)
        }
    }

    /// What trying again cannot change: the invitation itself, or a credential already held.
    static func isForGood(_ code: String) -> Bool {
        code.hasPrefix("invitation.") || code == "credential.exists" || code == "invalidParams"
            || code == "site.insecureTransport"
    }
}
