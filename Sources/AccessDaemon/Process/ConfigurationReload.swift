import Logging

/// `SIGHUP` (`systemctl reload accessd`): the configuration file read again. What can change
/// in a running accessd is applied; every other changed setting is named in the log as
/// needing a restart (docs/configuration.md, "Reloading"), and keeps its running value. A
/// file that does not load is refused whole: the running configuration stays.
public struct ConfigurationReload: Sendable {
    public struct Outcome: Sendable, Equatable {
        /// Applied now, by their names in the file (`range.sensitivity`).
        public var applied: [String]
        /// Changed in the file, kept at their running value until a restart.
        public var needRestart: [String]
    }

    /// Compares `running` and `reloaded` setting by setting, applies what can change live,
    /// and returns the configuration now in effect with what happened. The caller hands the
    /// effective configuration to the services (`AccessDaemonServices.reconfigure`).
    public static func apply(
        _ reloaded: AccessdConfiguration, over running: AccessdConfiguration,
        logLevel: LogLevelSetting
    ) -> (AccessdConfiguration, Outcome) {
        let effective = takingLiveSettings(of: reloaded, into: running)
        let outcome = Outcome(
            applied: changedSettings(running, effective).map(fileName),
            needRestart: changedSettings(effective, reloaded).map(fileName))
        if effective.logLevel != running.logLevel {
            logLevel.set(Logger.Level(rawValue: effective.logLevel.rawValue) ?? .info)
        }
        return (effective, outcome)
    }

    /// The settings a running accessd takes: the log level, and the range and access timings
    /// the engines read for each decision and exchange they start. The rest shape what was
    /// built at start (the socket, the store, the adapter, the slots, the site client, held
    /// links) and wait for a restart.
    static func takingLiveSettings(
        of reloaded: AccessdConfiguration,
        into running: AccessdConfiguration
    ) -> AccessdConfiguration {
        var c = running
        c.logLevel = reloaded.logLevel
        c.sensitivity = reloaded.sensitivity
        c.smoothingFactor = reloaded.smoothingFactor
        c.approachSmoothingFactor = reloaded.approachSmoothingFactor
        c.autoRangeExitMargin = reloaded.autoRangeExitMargin
        c.expiryDelay = reloaded.expiryDelay
        c.staleTimeout = reloaded.staleTimeout
        c.manualTimeout = reloaded.manualTimeout
        c.cooldown = reloaded.cooldown
        c.selectionWindow = reloaded.selectionWindow
        c.holdTime = reloaded.holdTime
        c.maximumRetries = reloaded.maximumRetries
        c.stepTimeout = reloaded.stepTimeout
        c.secondFactorTimeout = reloaded.secondFactorTimeout
        c.secondFactorPrompt = reloaded.secondFactorPrompt
        c.readerRules = reloaded.readerRules
        c.openNextExpiry = reloaded.openNextExpiry
        return c
    }

    /// The names of the fields that differ (`AccessdConfiguration`'s property names).
    static func changedSettings(_ old: AccessdConfiguration, _ new: AccessdConfiguration) -> [String] {
        // Mirror, so a setting added later is compared without touching this file.
        let before = Mirror(reflecting: old).children
        let after = Mirror(reflecting: new).children
        return zip(before, after).compactMap { old, new in
            guard let label = old.label, !same(old.value, new.value) else { return nil }
            return label
        }
    }

    /// Equal, for settings that can say (every `Hashable` one: sets compare by their members,
    /// not by the order they print them in); else by how they print.
    private static func same(_ old: Any, _ new: Any) -> Bool {
        if let old = old as? AnyHashable, let new = new as? AnyHashable { return old == new }
        return String(describing: old) == String(describing: new)
    }

    /// A property's name as an operator writes it (`[range] sensitivity` is
    /// `range.sensitivity`), from the table of keys; ConfigurationReloadTests checks that
    /// every property has one.
    static func fileName(_ property: String) -> String { ConfigurationKeys.fileNames[property] ?? property }
}
