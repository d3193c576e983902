/// Python for python-dbusmock's bluez5 template (`BlueZMock.run(python:)`): many readers
/// appearing and advertising as bluetoothd reports them, in one method call each, faster
/// than a D-Bus call per object or signal could. Reader `i` (from 0) has id `i + 1`, address
/// `00:BB:03:00:HH:LL` and advertises the service data of a Gallagher-style reader at site
/// 0x5117E001 (auto range 20 dB, manual 40 dB).
public enum MockReaders {
    /// Readers `from` … `from + count − 1` appear: a Device1 object each, announced with
    /// InterfacesAdded.
    public static func appear(_ count: Int, from: Int) -> String {
        """
        manager = objects['/']
        for i in range(\(from), \(from + count)):
        \(device)
            properties = {'Address': dbus.String(address), 'Adapter': dbus.ObjectPath('/org/bluez/hci0'),
                          'RSSI': dbus.Int16(-60), 'Connected': dbus.Boolean(False),
                          'ServiceData': dbus.Dictionary({'0000fff8-0000-1000-8000-00805f9b34fb':
                              dbus.Array(payload, signature='y')}, signature='sv')}
            self.AddObject(path, 'org.bluez.Device1', properties, [])
            manager.EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}',
                               [dbus.ObjectPath(path), {'org.bluez.Device1': properties}])
        """
    }

    /// One advertisement of each of readers 0 … `count − 1`, as bluetoothd reports one with
    /// `DuplicateData`: a PropertiesChanged of RSSI and ServiceData.
    public static func advertise(_ count: Int, rssi: Int) -> String {
        """
        for i in range(0, \(count)):
        \(device)
            objects[path].EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                ['org.bluez.Device1', {'RSSI': dbus.Int16(\(rssi)), 'ServiceData': dbus.Dictionary(
                    {'0000fff8-0000-1000-8000-00805f9b34fb': dbus.Array(payload, signature='y')}, signature='sv')}, []])
        """
    }

    /// Reader `reader` appears, if it has not, and advertises once: the first advertisement of
    /// a new reader, which accessd reports at once (`reader.updated`).
    public static func appearAndAdvertise(_ reader: Int, rssi: Int) -> String {
        """
        for i in [\(reader)]:
        \(device)
            if path not in objects:
                properties = {'Address': dbus.String(address), 'Adapter': dbus.ObjectPath('/org/bluez/hci0'),
                              'RSSI': dbus.Int16(\(rssi)), 'Connected': dbus.Boolean(False)}
                self.AddObject(path, 'org.bluez.Device1', properties, [])
                objects['/'].EmitSignal('org.freedesktop.DBus.ObjectManager', 'InterfacesAdded', 'oa{sa{sv}}',
                                        [dbus.ObjectPath(path), {'org.bluez.Device1': properties}])
            objects[path].EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                ['org.bluez.Device1', {'RSSI': dbus.Int16(\(rssi)), 'ServiceData': dbus.Dictionary(
                    {'0000fff8-0000-1000-8000-00805f9b34fb': dbus.Array(payload, signature='y')}, signature='sv')}, []])
        """
    }

    /// Reader `i`'s id as accessd shows it (`reader.updated`'s `id`).
    public static func readerID(_ reader: Int) -> String {
        let hex = String(reader + 1, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }

    /// Reader `i`'s object path, address and service data (indented for the loop body).
    private static let device = """
            path = '/org/bluez/hci0/dev_00_BB_03_00_%02X_%02X' % (i // 256, i % 256)
            address = '00:BB:03:00:%02X:%02X' % (i // 256, i % 256)
            payload = [1, 1, 3, 0, 0, (i + 1) // 256, (i + 1) % 256, 0xC5, 20, 40, 0x51, 0x17, 0xE0, 1]
        """
}
