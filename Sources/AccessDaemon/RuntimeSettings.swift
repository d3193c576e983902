import AccessCore
import AccessStore
import Logging

/// What an operator changes at run time: the on/off switches (`scanning.set`,
/// `automaticAccess.set`) and the reader scope's rules (`readers.setScope`), saved so they
/// outlive restarts and win over the configuration's, and the log level, which does not
/// outlive the process.
struct RuntimeSettings: Sendable {
    enum Switch: String {
        case scanning, automaticAccess
    }

    let store: AccessStore
    let logLevel: LogLevelSetting

    /// The switch's saved value, nil if no operator ever set it.
    func saved(_ setting: Switch) throws -> Bool? {
        try store.boolSetting(setting.rawValue)
    }

    func save(_ setting: Switch, _ enabled: Bool) throws {
        try store.setBoolSetting(setting.rawValue, enabled)
    }

    /// The operator's reader-scope rules (`readers.setScope`), empty if none were set.
    func savedReaderRules() throws -> [ReaderID: ReaderScope.Rule] {
        try store.setting(ReaderScopeCalls.settingKey).map(ReaderScopeCalls.decode) ?? [:]
    }

    func saveReaderRules(_ rules: [ReaderID: ReaderScope.Rule]) throws {
        try store.setSetting(ReaderScopeCalls.settingKey, ReaderScopeCalls.encode(rules))
    }
}
