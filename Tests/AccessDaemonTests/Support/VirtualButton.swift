import BlueZTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real input device made with the kernel's uinput (lab only: the host has no /dev/uinput):
/// a key that `press()` presses and releases, as a USB push-button would. Python's fcntl makes
/// the ioctls (UI_SET_EVBIT, UI_SET_KEYBIT, UI_DEV_CREATE) that Swift cannot call (ioctl is
/// variadic); the events reach accessd through evdev exactly as a hardware button's do.
final class VirtualButton: @unchecked Sendable {
    let node: String
    private let process: ChildProcess
    private let control: Int32

    static let script = #"""
        import fcntl, os, struct, sys, time
        KEY = int(sys.argv[2])
        fd = os.open("/dev/uinput", os.O_WRONLY | os.O_NONBLOCK)
        fcntl.ioctl(fd, 0x40045564, 1)      # UI_SET_EVBIT EV_KEY
        fcntl.ioctl(fd, 0x40045565, KEY)    # UI_SET_KEYBIT
        name = b"accessd-test-button"
        # struct uinput_user_dev: name[80], input_id (4 x u16), ff_effects_max, abs arrays.
        os.write(fd, name.ljust(80, b"\0") + struct.pack("HHHHI", 3, 0x1234, 0x5678, 1, 0) + bytes(4 * 64 * 4))
        fcntl.ioctl(fd, 0x5501)             # UI_DEV_CREATE
        node = None
        for _ in range(100):
            for entry in os.listdir("/sys/class/input"):
                if entry.startswith("event"):
                    with open("/sys/class/input/%s/device/name" % entry, "rb") as f:
                        if f.read().strip() == name:
                            node = "/dev/input/" + entry
            if node and os.path.exists(node):
                break
            time.sleep(0.05)
        print(node, flush=True)
        def emit(kind, code, value):
            now = time.time()
            os.write(fd, struct.pack("llHHi", int(now), int((now % 1) * 1e6), kind, code, value))
        with open(sys.argv[1], "r") as commands:
            for line in commands:
                if line.strip() == "press":
                    emit(1, KEY, 1); emit(0, 0, 0); time.sleep(0.05); emit(1, KEY, 0); emit(0, 0, 0)
                elif line.strip() == "quit":
                    break
        fcntl.ioctl(fd, 0x5502)             # UI_DEV_DESTROY
        """#

    init(directory: String, key: Int = 28) throws {
        // The lab's kernel loads neither on its own: uinput makes the device, evdev its node.
        _ = try? runCommand(["/sbin/modprobe", "uinput"])
        _ = try? runCommand(["/sbin/modprobe", "evdev"])
        let fifo = directory + "/button-commands"
        guard mkfifo(fifo, 0o600) == 0 else { throw TestEnvironmentError("mkfifo \(fifo): \(errno)") }
        control = open(fifo, O_RDWR)
        let script = directory + "/uinput-button.py"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let out = directory + "/button.out"
        process = try ChildProcess(["/usr/bin/python3", script, fifo, String(key)], output: out)
        var found: String?
        for _ in 0..<250 {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first, line.hasPrefix("/dev/input/") { found = String(line) }
            if found != nil || !process.isRunning { break }
            usleep(20_000)
        }
        guard let found else {
            throw TestEnvironmentError("no uinput device: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")")
        }
        node = found
    }

    func press() {
        _ = "press\n".withCString { write(control, $0, strlen($0)) }
    }

    deinit {
        _ = "quit\n".withCString { write(control, $0, strlen($0)) }
        _ = process.stop(grace: 2)
        close(control)
    }
}
