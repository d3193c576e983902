import AccessFuzzing
import Foundation

#if FUZZING
    import CLibFuzzer
#endif

#if FUZZING
    /// The harness libFuzzer's callback runs: a C function pointer carries no context. Set once,
    /// before libFuzzer starts; libFuzzer calls back on the main thread only.
    nonisolated(unsafe) private var fuzzedHarness: FuzzHarness?

    /// libFuzzer's callback, under the name its own `main` (linked in by -sanitize=fuzzer) needs.
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        fuzzedHarness?.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }
#endif

/// `accessfuzz`: the fuzz harnesses (docs/testing.md, "Fuzzing").
///
/// Built by `scripts/fuzz` with `-sanitize=fuzzer,address -DFUZZING`, it is a libFuzzer
/// binary: `ACCESSFUZZ_HARNESS=config accessfuzz CORPUS_DIR -max_total_time=60` (the first
/// argument may name the harness instead). Built normally, it replays inputs through a
/// harness, to check a finding: `accessfuzz HARNESS FILE_OR_DIR...`.
///
/// Not ArgumentParser: under libFuzzer every option belongs to libFuzzer.
@main
struct AccessfuzzCommand {
    static func main() {
        var arguments = CommandLine.arguments
        if arguments.count > 1, FuzzHarness(rawValue: arguments[1]) != nil {
            setenv("ACCESSFUZZ_HARNESS", arguments.remove(at: 1), 1)
        }
        guard let name = ProcessInfo.processInfo.environment["ACCESSFUZZ_HARNESS"],
            let harness = FuzzHarness(rawValue: name)
        else {
            let names = FuzzHarness.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(
                Data("usage: accessfuzz HARNESS [FILE_OR_DIR...]\nharnesses: \(names)\n".utf8))
            exit(64)
        }
        #if FUZZING
            fuzzedHarness = harness
            var argc = Int32(arguments.count)
            var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            let status = cStrings.withUnsafeMutableBufferPointer { buffer in
                var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
                return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
            }
            exit(status)
        #else
            exit(replay(harness, paths: Array(arguments.dropFirst())))
        #endif
    }

    /// Each file (directories: each file in them) through the harness; a broken property traps.
    static func replay(_ harness: FuzzHarness, paths: [String]) -> Int32 {
        var count = 0
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("accessfuzz: no such file: \(path)\n".utf8))
                return 66
            }
            let files =
                isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                harness.run(Array(data))
                count += 1
            }
        }
        print("\(harness.rawValue): \(count) inputs replayed, no property broken")
        return 0
    }
}
