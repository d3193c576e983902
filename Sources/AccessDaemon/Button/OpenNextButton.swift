import Dispatch
import FoundationEssentials
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A physical "open the door" button (`[button]`): a key of a Linux input device, read with
/// the kernel's evdev interface. Each press opens the open-next window (`access.next`).
///
/// Read on a thread of its own with poll(2), not on the concurrency pool: the device is a
/// character device read in whole `struct input_event` records, and nothing here may hold a
/// pool thread. An unplugged device (ENODEV) or one not there yet is opened again every 2 s,
/// with one log line per change, so a USB button can come and go. The device is not grabbed:
/// other readers of it (a desktop, `evtest`) still see its keys.
final class OpenNextButton: Sendable {
    let device: String
    let key: InputKeyCode
    let pressed: @Sendable () -> Void
    let logger: Logger
    private let stopping = Atomic<Bool>(false)

    init(device: String, key: InputKeyCode, logger: Logger, pressed: @escaping @Sendable () -> Void) {
        self.device = device
        self.key = key
        self.logger = logger
        self.pressed = pressed
    }

    /// Reads until the task is cancelled.
    func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                // A queue of its own: its thread blocks in read(2) for as long as accessd runs.
                DispatchQueue(label: "accessd-button").async { [self] in
                    readUntilStopped()
                    done.resume()
                }
            }
        } onCancel: {
            stopping.store(true, ordering: .relaxed)
        }
    }

    /// `struct input_event`: a `timeval`, then type, code (16 bits each) and value (32 bits).
    static let recordSize = MemoryLayout<timeval>.size + 8
    static let keyEvent: UInt16 = 1  // EV_KEY
    static let pressValue: Int32 = 1  // 0 release, 2 auto-repeat

    /// The presses of `key` in `bytes` (whole records; a partial one is ignored).
    static func presses(in bytes: UnsafeRawBufferPointer, key: UInt16) -> Int {
        var count = 0
        var offset = 0
        let header = MemoryLayout<timeval>.size
        while offset + recordSize <= bytes.count {
            let type = bytes.loadUnaligned(fromByteOffset: offset + header, as: UInt16.self)
            let code = bytes.loadUnaligned(fromByteOffset: offset + header + 2, as: UInt16.self)
            let value = bytes.loadUnaligned(fromByteOffset: offset + header + 4, as: Int32.self)
            if type == keyEvent && code == key && value == pressValue { count += 1 }
            offset += recordSize
        }
        return count
    }

    private var stopped: Bool { stopping.load(ordering: .relaxed) }

    private func readUntilStopped() {
        var lastProblem: String?
        while !stopped {
            let fd = open(device, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                let problem = String(cString: strerror(errno))
                if problem != lastProblem {
                    logger.warning(
                        "button device cannot be opened; trying again every 2 s",
                        metadata: ["device": "\(device)", "error": "\(problem)"])
                    lastProblem = problem
                }
                pause(seconds: 2)
                continue
            }
            logger.notice("button ready", metadata: ["device": "\(device)", "key": "\(key)"])
            lastProblem = nil
            let problem = readPresses(fd)
            close(fd)
            if let problem, !stopped {
                logger.warning(
                    "button device lost; trying again every 2 s",
                    metadata: ["device": "\(device)", "error": "\(problem)"])
                lastProblem = problem
                pause(seconds: 2)
            }
        }
    }

    /// Until stopped (nil) or the device fails (its error).
    private func readPresses(_ fd: Int32) -> String? {
        let capacity = Self.recordSize * 64
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while !stopped {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 250)
            if ready < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            if ready == 0 { continue }
            if poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && poller.revents & Int16(POLLIN) == 0 {
                return "the device hung up"
            }
            let count = read(fd, buffer.baseAddress, capacity)
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            if count == 0 { return "end of file" }
            let presses = Self.presses(in: UnsafeRawBufferPointer(rebasing: buffer[0..<count]), key: key.code)
            for _ in 0..<presses {
                logger.info("button pressed", metadata: ["device": "\(device)"])
                pressed()
            }
        }
        return nil
    }

    private func pause(seconds: Int) {
        for _ in 0..<(seconds * 4) where !stopped { usleep(250_000) }
    }
}
