import AccessCore
import ArgumentParser

@main
struct AccessctlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessctl",
        abstract: "Query and control a running accessd over its Unix socket.",
        discussion: """
            The socket commands (status, readers, access, events, ...) arrive with the \
            control socket (issue 4); this build reports its version only.
            """,
        version: AccessCoreVersion.string
    )
}
