// swift-tools-version: 6.1
import PackageDescription

// Dependencies point one way (docs/architecture.md):
// executables → AccessDaemon / ControlSocket / SiteContract → AccessStore / AccessCore /
// AccessJSON / BlueZ → CBlueZ.
// AccessCore imports nothing of the project and performs no I/O.
let package = Package(
    name: "accessd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "accessd", targets: ["accessd"]),
        .executable(name: "accessctl", targets: ["accessctl"]),
        .executable(name: "readersim", targets: ["readersim"]),
        .executable(name: "accessbench", targets: ["accessbench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/ordo-one/malloc-interposer.git", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/pointfreeco/swift-clocks.git", from: "1.1.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Child processes (dpkg-query, bluetoothd --version, accessctl diagnose) without
        // Foundation's Process: its trait that brings Foundation is off (issue #37).
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2", traits: []),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
    ],
    targets: [
        // The MQTT broker project's own client library, for the fleet bridge (docs/fleet.md):
        // its header (libmosquitto-dev) at build time, libmosquitto.so.1 loaded with dlopen
        // when the bridge first starts (Sources/CMosquitto/include/mosquitto_library.h says why).
        .target(name: "CMosquitto"),
        // System libraries the C shim wraps (docs/bluez.md: pkg-config names dbus-1 and bluez).
        .systemLibrary(
            name: "CDBus",
            path: "Sources/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(
            name: "CBluetooth",
            path: "Sources/CBluetooth",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        // sd_journal_sendv: log entries with fields a fleet can query (docs/operations.md).
        .systemLibrary(
            name: "CSystemd",
            path: "Sources/CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // libFuzzer's driver entry point; linked only by scripts/fuzz's -sanitize=fuzzer.
        .systemLibrary(name: "CLibFuzzer", path: "Sources/CLibFuzzer"),
        .target(name: "CBlueZ", dependencies: ["CDBus", "CBluetooth"]),
        // The system's SQLite, which AccessStore uses through its C API (Sources/AccessStore/SQLite).
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Small files read whole with bounds (configuration, invitation, data key).
        .target(name: "BoundedFile"),
        // A fatal signal sent from outside ends accessd after the runtime's backtrace.
        .target(name: "CFatalSignals"),
        // How accessd's process uses memory, set before main (Sources/CProcessMemory).
        .target(name: "CProcessMemory"),
        .target(
            name: "BlueZ",
            dependencies: ["CBlueZ", "CDBus", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        // A private dbus-daemon and python-dbusmock's bluez5 template, for tests and benchmarks.
        .target(name: "BlueZTestSupport", dependencies: ["BlueZ"]),

        .target(
            name: "AccessCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // JSONValue: the free-form JSON both the control socket and the site API carry.
        .target(name: "AccessJSON"),
        // docs/site-api.md's messages, shared by accessd's SiteClient and readersim's site.
        .target(
            name: "SiteContract",
            dependencies: ["AccessCore", "AccessJSON", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "AccessStore",
            dependencies: [
                "AccessCore", "BoundedFile", "CSQLite", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .target(
            name: "ControlSocket",
            dependencies: [
                "AccessJSON",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "AccessDaemon",
            dependencies: [
                "AccessCore", "AccessJSON", "AccessStore", "BlueZ", "BoundedFile", "CMosquitto", "ControlSocket",
                "CSystemd", "SiteContract",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The metrics endpoint (docs/operations.md, "Metrics").
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        .executableTarget(
            name: "accessd",
            dependencies: [
                "AccessCore", "AccessctlCommands", "AccessDaemon", "AccessStore", "BlueZ", "CFatalSignals",
                "CProcessMemory", "ControlSocket",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // accessctl's commands, a library: the `accessctl` executable runs them, and so does
        // `accessd` when started as accessctl (the package ships one binary, accessctl a link
        // to it: the Swift runtime and the libraries once, issue #37).
        .target(
            name: "AccessctlCommands",
            dependencies: [
                "AccessCore", "AccessJSON", "BlueZ", "BoundedFile", "ControlSocket",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The diagnostics bundle's metrics: one GET to accessd's own endpoint.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(name: "accessctl", dependencies: ["AccessctlCommands"]),
        .executableTarget(
            name: "readersim",
            dependencies: [
                // AccessDaemon: `conformance` registers its credential with accessd's own site client.
                "AccessCore", "AccessDaemon", "AccessJSON", "BlueZ", "ReaderSimulation", "SiteContract",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // readersim's reader file, a library so that accessfuzz reaches the parser.
        .target(name: "ReaderSimulation", dependencies: ["AccessCore"]),
        // One fuzz harness per parser of outside input (docs/testing.md, "Fuzzing").
        .target(
            name: "AccessFuzzing",
            dependencies: [
                "AccessCore", "AccessDaemon", "AccessJSON", "ControlSocket", "ReaderSimulation", "SiteContract",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(name: "accessfuzz", dependencies: ["AccessFuzzing", "CLibFuzzer"]),
        .executableTarget(
            name: "accessbench",
            dependencies: [
                "AccessCore",
                "AccessJSON",
                "AccessStore",
                "BlueZ",
                "BlueZTestSupport",
                "ControlSocket",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The e2e baseline script runs from the source tree (the lab sees the host's files).
            exclude: ["Baseline"]
        ),

        .testTarget(name: "AccessCoreTests", dependencies: ["AccessCore"]),
        // Traits the suites that block on sockets and child processes share.
        .target(name: "SuiteTraits", dependencies: ["BlueZTestSupport"], path: "Tests/SuiteTraits"),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "BlueZTestSupport", "SuiteTraits"]),
        .testTarget(
            name: "AccessStoreTests",
            dependencies: [
                "AccessStore", "AccessCore", .product(name: "Crypto", package: "swift-crypto"),
                // The tests look into the database the store wrote with another SQLite library.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "AccessDaemonTests",
            dependencies: [
                "AccessCore", "AccessDaemon", "AccessFuzzing", "AccessJSON", "AccessStore", "ControlSocket",
                "BlueZTestSupport", "SiteContract", "SuiteTraits",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
