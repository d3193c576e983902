/// accessctl's entry point, for the two programs that run it: the `accessctl` executable, and
/// `accessd` when it was started under the name accessctl (the package's `/usr/bin/accessctl`
/// is a link to `/usr/sbin/accessd`).
public enum Accessctl {
    /// Parses the process's arguments and runs the command; exits with the command's status
    /// when it fails, returns when it succeeded.
    public static func main() {
        AccessctlCommand.main()
    }
}
