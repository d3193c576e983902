import Logging

/// `SIGHUP` (`systemctl reload accessd`): the configuration file read again. What can change
/// in a running accessd is applied; every other changed setting is named in the log as
/// needing a restart (docs/configuration.md, "Reloading"), and keeps its running value. A
/// file that does not load is refused whole: the running configuration stays.
public struct ConfigurationReload: Sendable {
    /// The settings a reload applies.
    static let appliedLive: Set<String> = ["logLevel"]

    public struct Outcome: Sendable, Equatable {
        /// Applied now.
        public var applied: [String]
        /// Changed in the file, kept at their running value until a restart.
        public var needRestart: [String]
    }

    /// Compares `running` and `reloaded` setting by setting, applies what can change live,
    /// and returns the configuration now in effect with what happened.
    public static func apply(_ reloaded: AccessdConfiguration, over running: AccessdConfiguration,
                             logLevel: LogLevelSetting) -> (AccessdConfiguration, Outcome) {
        var effective = running
        var outcome = Outcome(applied: [], needRestart: [])
        for name in changedSettings(running, reloaded) {
            if appliedLive.contains(name) {
                outcome.applied.append(name)
            } else {
                outcome.needRestart.append(name)
            }
        }
        if outcome.applied.contains("logLevel") {
            effective.logLevel = reloaded.logLevel
            logLevel.set(Logger.Level(rawValue: reloaded.logLevel.rawValue) ?? .info)
        }
        return (effective, outcome)
    }

    /// The names of the fields that differ (`AccessdConfiguration`'s property names).
    static func changedSettings(_ old: AccessdConfiguration, _ new: AccessdConfiguration) -> [String] {
        // Mirror, so a setting added later is compared without touching this file.
        let before = Mirror(reflecting: old).children, after = Mirror(reflecting: new).children
        return zip(before, after).compactMap { old, new in
            guard let label = old.label, String(describing: old.value) != String(describing: new.value) else { return nil }
            return label
        }
    }
}
