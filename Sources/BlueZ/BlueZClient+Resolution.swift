/// Waiting for a device's GATT services: BlueZ resolves them after connecting and says so
/// with `ServicesResolved`; the wait ends early when the device disconnects or vanishes,
/// at its timeout, or when the caller is cancelled.
///
/// Resolved is not final. With a cached database (BlueZ keeps a device's services between
/// connections), bluetoothd can say `ServicesResolved` true, then learn that the peer's
/// database changed (its hash, or a Service Changed indication), say false, remove the
/// services and add them again, and say true once more. A characteristic looked for in that
/// window is missing for a moment, not for good: `resolvedCharacteristic` waits it out.
extension BlueZClient {
    /// How a wait for `ServicesResolved` (or for a change of the device's GATT objects) ended.
    enum ResolutionEnd {
        case resolved, disconnected, vanished, timedOut, cancelled
        /// A GATT service or characteristic of the device appeared.
        case gattChanged
    }

    /// One caller waiting on a device.
    struct ResolutionWaiter {
        let continuation: CheckedContinuation<ResolutionEnd, Never>
        /// Woken by any change of the device's GATT objects, not only by resolution.
        let wantsChanges: Bool
    }

    /// Wakes the device's waiters: all of them for an end, only those that want changes
    /// for `.gattChanged`.
    func wakeResolvedWaiters(device: String, _ end: ResolutionEnd) {
        guard let waiters = resolvedWaiters[device] else { return }
        let woken = end == .gattChanged ? waiters.filter(\.value.wantsChanges) : waiters
        guard !woken.isEmpty else { return }
        resolvedWaiters[device] = waiters.filter { woken[$0.key] == nil }
        if resolvedWaiters[device]?.isEmpty == true { resolvedWaiters[device] = nil }
        for waiter in woken.values { waiter.continuation.resume(returning: end) }
    }

    /// Connects and waits until BlueZ has resolved the device's GATT services.
    public func connectAndResolve(device: String, timeout: Duration = .seconds(10)) async throws(BlueZError) {
        let deadline = ContinuousClock.now + timeout
        try await connect(device: device, timeout: timeout)
        try await waitForServicesResolved(device: device, timeout: deadline - ContinuousClock.now)
    }

    /// Waits for `ServicesResolved` to become true. Fails with `.doesNotExist` when
    /// bluetoothd says the device disconnected (`Connected` false) or the device vanishes
    /// first, `.timeout` after `timeout`, `.cancelled` when the caller is cancelled.
    public func waitForServicesResolved(device: String, timeout: Duration) async throws(BlueZError) {
        guard let state = devices[device] else { throw .doesNotExist }
        if state.servicesResolved { return }
        switch await wait(device: device, timeout: timeout, wantsChanges: false) {
        case .resolved, .gattChanged: return
        case .timedOut: throw .timeout
        case .cancelled: throw .cancelled
        case .disconnected, .vanished: throw .doesNotExist
        }
    }

    /// A characteristic of the device once its services are resolved: waits for
    /// `ServicesResolved`, and when the characteristic is not there, for BlueZ to resolve the
    /// services again (see above) until `timeout`. Nil when the device resolved its services
    /// and the characteristic did not appear by then; the errors are `waitForServicesResolved`'s.
    public func resolvedCharacteristic(
        device: String, service: String, characteristic: String,
        timeout: Duration
    ) async throws(BlueZError) -> GattCharacteristicState? {
        let deadline = ContinuousClock.now + timeout
        while true {
            try await waitForServicesResolved(device: device, timeout: deadline - ContinuousClock.now)
            if let found = self.characteristic(device: device, service: service, characteristic: characteristic) {
                return found
            }
            switch await wait(device: device, timeout: deadline - ContinuousClock.now, wantsChanges: true) {
            case .resolved, .gattChanged: continue
            case .timedOut: return nil
            case .cancelled: throw .cancelled
            case .disconnected, .vanished: throw .doesNotExist
            }
        }
    }

    /// How many callers wait for this device's services (for tests and diagnostics).
    public func resolutionWaiters(device: String) -> Int {
        resolvedWaiters[device]?.count ?? 0
    }

    private func wait(device: String, timeout: Duration, wantsChanges: Bool) async -> ResolutionEnd {
        let id = nextWaiter
        nextWaiter += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: max(timeout, .zero))
            await self?.endWaiter(device: device, id: id, .timedOut)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(returning: ResolutionEnd.cancelled)
                } else {
                    resolvedWaiters[device, default: [:]][id] = ResolutionWaiter(
                        continuation: continuation,
                        wantsChanges: wantsChanges)
                }
            }
        } onCancel: {
            Task { await self.endWaiter(device: device, id: id, .cancelled) }
        }
    }

    private func endWaiter(device: String, id: UInt64, _ end: ResolutionEnd) {
        guard let waiter = resolvedWaiters[device]?.removeValue(forKey: id) else { return }
        if resolvedWaiters[device]?.isEmpty == true { resolvedWaiters[device] = nil }
        waiter.continuation.resume(returning: end)
    }
}
