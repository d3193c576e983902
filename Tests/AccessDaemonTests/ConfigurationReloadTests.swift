import Logging
import Testing

@testable import AccessDaemon

/// What a reload (SIGHUP) applies and what it leaves for a restart (issue #11).
struct ConfigurationReloadTests {
    @Test func rangeAndAccessTimingsApplyTheRestWaitsForARestart() {
        let running = AccessdConfiguration()
        var file = running
        file.logLevel = .debug
        file.sensitivity = .veryLow
        file.cooldown = .seconds(20)
        file.secondFactorPrompt = "PIN please"
        file.connectionLimit = 2
        file.socketPath = "/run/other.sock"
        let level = LogLevelSetting(.info)
        let (effective, outcome) = ConfigurationReload.apply(file, over: running, logLevel: level)
        #expect(outcome.applied == ["access.cooldown", "range.sensitivity", "prompts.second_factor", "log.level"])
        #expect(outcome.needRestart == ["access.connection_limit", "socket.path"])
        #expect(level.current == .debug)
        #expect(effective.sensitivity == .veryLow && effective.cooldown == .seconds(20))
        #expect(effective.connectionLimit == running.connectionLimit)
        #expect(effective.socketPath == running.socketPath)
        #expect(
            ConfigurationReload.apply(running, over: running, logLevel: level).1 == .init(applied: [], needRestart: []))
    }

    /// A setting added later must get its file name, or the log would name a Swift property.
    @Test func everySettingHasItsFileName() {
        let properties = Mirror(reflecting: AccessdConfiguration()).children.compactMap(\.label)
        #expect(properties.count == ConfigurationReload.fileNames.count)
        for property in properties {
            #expect(ConfigurationReload.fileNames[property] != nil, "\(property) has no file name")
        }
    }

    /// Connecting early shapes held links; a reload keeps the running choice.
    @Test func connectingEarlyIsNotSwitchedByAReload() {
        let running = AccessdConfiguration()
        var file = running
        file.connectEarly = false
        let (effective, outcome) = ConfigurationReload.apply(file, over: running, logLevel: LogLevelSetting(.info))
        #expect(outcome.needRestart == ["access.connect_early"])
        #expect(effective.autoConnectConfiguration.connectEarly == true)
    }
}
