import ArgumentParser

@main
struct AccessbenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accessbench",
        abstract: "Benchmarks that print figures. Build with -c release; numbers from debug builds mean little.",
        discussion: """
            Every suite prints a human summary, or with --json one object: \
            {"suite":NAME,"results":[...]}.
            """,
        subcommands: [
            CoreBenchmark.self, BlueZBenchmark.self, SocketBenchmark.self, E2EBenchmark.self, FleetBenchmark.self,
            FleetCommandBenchmark.self,
            RangeStudy.self, ReadersBenchmark.self, PinBenchmark.self, LobbyBenchmark.self,
        ]
    )
}
