/// Waiting for a device's GATT services: BlueZ resolves them after connecting and says so
/// with `ServicesResolved`; the wait ends early when the device disconnects or vanishes,
/// at its timeout, or when the caller is cancelled.
extension BlueZClient {
    /// How a wait for `ServicesResolved` ended.
    enum ResolutionEnd {
        case resolved, disconnected, vanished, timedOut, cancelled
    }

    func wakeResolvedWaiters(device: String, _ end: ResolutionEnd) {
        guard let waiters = resolvedWaiters.removeValue(forKey: device) else { return }
        for waiter in waiters.values { waiter.resume(returning: end) }
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
        let id = nextWaiter
        nextWaiter += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: max(timeout, .zero))
            await self?.endWaiter(device: device, id: id, .timedOut)
        }
        defer { timer.cancel() }
        let end = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(returning: ResolutionEnd.cancelled)
                } else {
                    resolvedWaiters[device, default: [:]][id] = continuation
                }
            }
        } onCancel: {
            Task { await self.endWaiter(device: device, id: id, .cancelled) }
        }
        switch end {
        case .resolved: return
        case .timedOut: throw .timeout
        case .cancelled: throw .cancelled
        case .disconnected, .vanished: throw .doesNotExist
        }
    }

    /// How many callers wait for this device's services (for tests and diagnostics).
    public func resolutionWaiters(device: String) -> Int {
        resolvedWaiters[device]?.count ?? 0
    }

    private func endWaiter(device: String, id: UInt64, _ end: ResolutionEnd) {
        guard let waiter = resolvedWaiters[device]?.removeValue(forKey: id) else { return }
        if resolvedWaiters[device]?.isEmpty == true { resolvedWaiters[device] = nil }
        waiter.resume(returning: end)
    }
}
