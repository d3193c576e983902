import AccessctlCommands

/// accessctl on its own, as the build and the tests run it; the package runs the same
/// commands from accessd's binary (Sources/accessd/Main.swift).
@main
enum AccessctlMain {
    static func main() {
        Accessctl.main()
    }
}
