import Foundation

/// A process's memory regions, from /proc/PID/maps.
struct ProcessMaps {
    struct Region {
        let start: UInt64
        let end: UInt64
        /// "r-xp", "rw-p", "---p", …
        let permissions: Substring
        let offset: UInt64
        /// The mapped file or pseudo-name ("[heap]"); nil for anonymous memory.
        let path: String?
    }

    let text: String
    let regions: [Region]

    /// Read to the end: `String(contentsOfFile:)` stops early on a large procfs file.
    init(pid: Int32) throws {
        guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "/proc/\(pid)/maps"])
        }
        defer { try? file.close() }
        self.init(String(decoding: file.readDataToEndOfFile(), as: UTF8.self))
    }

    init(_ text: String) {
        self.text = text
        regions = text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, let dash = fields[0].firstIndex(of: "-"),
                let start = UInt64(fields[0][..<dash], radix: 16),
                let end = UInt64(fields[0][fields[0].index(after: dash)...], radix: 16),
                let offset = UInt64(fields[2], radix: 16)
            else { return nil }
            let path = fields.count > 5 ? fields[5].trimmingCharacters(in: .whitespaces) : ""
            return Region(
                start: start, end: end, permissions: fields[1], offset: offset, path: path.isEmpty ? nil : path)
        }
    }

    /// Every file and pseudo-name mapped.
    var mappedFiles: Set<String> { Set(regions.compactMap(\.path)) }

    /// Where `path` is mapped from its first byte (a PIE's section addresses count from there).
    func loadAddress(of path: String) -> UInt64? {
        regions.first { $0.path == path && $0.offset == 0 }?.start
    }
}
