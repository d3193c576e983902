import Logging
import Testing

@testable import AccessDaemon

@Suite(.timeLimit(.minutes(5)))
/// What a reload (SIGHUP) applies and what it leaves for a restart (issue #11).
struct ConfigurationReloadTests {
    /// Equal settings are not a change, whatever order a set lists its members in: the
    /// comparison was of `String(describing:)`, and two equal sets grown differently print
    /// their members in different orders (issue #31), so a reload said `features.enabled`
    /// changed and needed a restart when the file had not changed.
    @Test func equalSetsListedInAnotherOrderAreNoChange() throws {
        let running = AccessdConfiguration()
        var small: Set<String> = []
        for feature in ["aperio", "salto", "digitalId"] { small.insert(feature) }
        // The same members in a set of another capacity, until one prints them in another
        // order (the order depends on the process's hash seed as well).
        let grown = try #require(
            (8...512).lazy.map { capacity -> Set<String> in
                var grown = Set<String>(minimumCapacity: capacity)
                for feature in ["digitalId", "salto", "aperio"] { grown.insert(feature) }
                return grown
            }.first { String(describing: $0) != String(describing: small) })
        var file = running
        var reloaded = running
        file.features = small
        reloaded.features = grown
        #expect(ConfigurationReload.changedSettings(file, reloaded) == [])
    }

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
        #expect(properties.count == ConfigurationKeys.fileNames.count)
        for property in properties {
            #expect(ConfigurationKeys.fileNames[property] != nil, "\(property) has no file name")
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
