import AccessDaemon
import ArgumentParser

@main
struct AccessdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessd",
        abstract: "Mobile-access credential holder for Bluetooth LE door readers.",
        discussion: """
            The service itself (BlueZ scanning, the control socket, persistence) is \
            tracked in issue 4; this build carries the access core only.
            """,
        version: AccessDaemon.version
    )

    func run() throws {
        throw ValidationError("the accessd service is not part of this build yet; see README.md")
    }
}
