import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension SystemdLabTests {
    /// The running service never reads its unwind tables: an async `@main` ended the main
    /// thread with `pthread_exit`, whose unwinding searched `.eh_frame_hdr` once at start and
    /// left most of it resident for the life of the process (Sources/accessd/Main.swift).
    /// Counted from /proc/PID/pagemap over the section's addresses in the installed binary.
    /// This file sorts before SystemdLabTests.swift and the serialized suite runs in source
    /// order (seen: by file, then by line), so this runs on the package already installed,
    /// not after the purge: a second install was 136 s of the boot.
    @Test func theUnwindTablesStayOutOfMemory() async throws {
        try await Lab.ensureInstalled()
        try await Lab.waitForScanning()
        guard let pid = Int32(try Lab.property("MainPID")), pid > 0 else {
            Issue.record("accessd is not running")
            return
        }
        let binary = "/usr/sbin/accessd"
        let base = try #require(try ProcessMaps(pid: pid).loadAddress(of: binary))
        var figures: [String] = []
        for name in [".eh_frame_hdr", ".eh_frame"] {
            let section = try #require(try ELFSections.find(name, in: binary))
            let resident = try ResidentPages.count(pid: pid, from: base + section.address, bytes: section.size)
            figures.append("\(name) \(resident * 4) of \(section.size / 1024) kB")
            // One fault-around window (64 KB) at most: a neighbouring section's page may bring it.
            #expect(resident <= 16, "\(name): \(resident) pages resident")
        }
        print("unwind tables resident: \(figures.joined(separator: ", "))")
        // For docs/performance.md: the installed service's resident set, idle, and the
        // libraries it mapped (NSS's systemd module only when a group is not in /etc/group).
        print(
            try Lab.must(
                "grep -E 'VmRSS|RssAnon|RssFile' /proc/\(pid)/status | tr -s ' \\t\\n' ' '; echo; "
                    + "awk '$6 ~ /\\.so/ {print $6}' /proc/\(pid)/maps | sort -u | xargs -n1 basename | tr '\\n' ' '"))
    }
}

/// Section headers of an ELF64 file (little-endian), enough to find one by name.
enum ELFSections {
    struct Section {
        let address: UInt64
        let size: UInt64
    }

    static func find(_ wanted: String, in path: String) throws -> Section? {
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? file.close() }
        func read(_ offset: UInt64, _ count: Int) throws -> [UInt8] {
            try file.seek(toOffset: offset)
            return [UInt8](try file.read(upToCount: count) ?? Data())
        }
        func integer(_ bytes: [UInt8], _ at: Int, _ width: Int) -> UInt64 {
            (0..<width).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
        }
        let header = try read(0, 64)
        guard header.count == 64, header[0..<4] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2 else { return nil }
        let tableOffset = integer(header, 0x28, 8)
        let entrySize = Int(integer(header, 0x3A, 2))
        let count = Int(integer(header, 0x3C, 2))
        let namesIndex = Int(integer(header, 0x3E, 2))
        let table = try read(tableOffset, entrySize * count)
        guard entrySize >= 64, table.count == entrySize * count, namesIndex < count else { return nil }
        let namesAt = namesIndex * entrySize
        let names = try read(integer(table, namesAt + 0x18, 8), Int(integer(table, namesAt + 0x20, 8)))
        for index in 0..<count {
            let at = index * entrySize
            let nameStart = Int(integer(table, at, 4))
            guard nameStart < names.count else { continue }
            let end = names[nameStart...].firstIndex(of: 0) ?? names.count
            if String(decoding: names[nameStart..<end], as: UTF8.self) == wanted {
                return Section(address: integer(table, at + 0x10, 8), size: integer(table, at + 0x20, 8))
            }
        }
        return nil
    }
}

/// Which of a process's pages are in memory (/proc/PID/pagemap; root).
enum ResidentPages {
    static func count(pid: Int32, from address: UInt64, bytes: UInt64) throws -> Int {
        let page: UInt64 = 4096
        let first = address / page
        let last = (address + bytes - 1) / page
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/pagemap"))
        defer { try? file.close() }
        try file.seek(toOffset: first * 8)
        let entries = [UInt8](try file.read(upToCount: Int(last - first + 1) * 8) ?? Data())
        return stride(from: 0, to: entries.count - 7, by: 8).filter { entries[$0 + 7] & 0x80 != 0 }.count
    }
}
