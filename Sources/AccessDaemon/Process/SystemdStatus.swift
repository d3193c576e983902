extension AccessDaemonServices {
    /// One line for `systemctl status` (sd_notify `STATUS=`): the adapter and whether it
    /// scans, the SDK states, readers in range and usable credentials, e.g.
    /// `scanning on hci0 · ok · 2 readers · 1/1 credentials usable`.
    public func statusLine() async -> String {
        let state = sdk.current
        let inputs = sdk.inputs
        let engine = await access.status
        let (_, adapter, _) = await discovery.scanningAndAdapter
        let scanning =
            state.isScanning
            ? "scanning on \(adapter ?? "?")"
            : adapter.map { "not scanning (\($0))" } ?? "no adapter"
        let states = state.states.map(\.rawValue).joined(separator: ",")
        let readers = engine.readerCount == 1 ? "1 reader" : "\(engine.readerCount) readers"
        return
            "\(scanning) · \(states) · \(readers) · \(inputs.usableCredentialCount)/\(book.credentials.count) credentials usable"
    }
}
