import Testing

@testable import AccessCore

@Suite("SDK state", .timeLimit(.minutes(5)))
struct SdkStateTests {
    static var ready: SdkStateInputs {
        var inputs = SdkStateInputs()
        inputs.bluetoothServicePresent = true
        inputs.adapterPresent = true
        inputs.adapterPowered = true
        inputs.usableCredentialCount = 1
        inputs.scanningEnabled = true
        inputs.discoveryRunning = true
        return inputs
    }

    @Test func allPreconditionsMetMeansScanningAndNoStates() {
        let state = SdkState(Self.ready)
        #expect(state.isScanning)
        #expect(state.states.isEmpty)
        #expect(SdkState.canScan(Self.ready))
    }

    @Test(arguments: MobileAccessState.allCases.prefix(5))
    func eachMissingRadioPreconditionHasItsStateAndStopsScanning(_ expected: MobileAccessState) {
        var inputs = Self.ready
        switch expected {
        case .bluetoothServiceUnavailable: inputs.bluetoothServicePresent = false
        case .errorNoBleFeature: inputs.adapterPresent = false
        case .errorDeviceNotSupported: inputs.adapterUnfit = true
        case .bleErrorDisabled: inputs.adapterPowered = false
        case .bleErrorUnauthorized: inputs.permissionGranted = false
        default: Issue.record("not a radio state: \(expected)")
        }
        let state = SdkState(inputs)
        #expect(state.states == [expected])
        #expect(!state.isScanning)
        #expect(!SdkState.canScan(inputs))
    }

    @Test func rfkillBlockIsDisabled() {
        var inputs = Self.ready
        inputs.adapterBlocked = true
        #expect(SdkState(inputs).states == [.bleErrorDisabled])
    }

    @Test func credentialStatesDoNotStopScanning() {
        var inputs = Self.ready
        inputs.usableCredentialCount = 0
        inputs.credentialsMissingSecondFactor = 1
        inputs.secondFactorLockedOut = true
        let state = SdkState(inputs)
        #expect(state.states == [.errorNoCredentials, .errorNoSecondFactorSet, .secondFactorLockedOut])
        #expect(state.isScanning)
    }

    @Test func scanningNeedsBothTheRequestAndBlueZ() {
        var inputs = Self.ready
        inputs.discoveryRunning = false
        #expect(!SdkState(inputs).isScanning)
        inputs.discoveryRunning = true
        inputs.scanningEnabled = false
        #expect(!SdkState(inputs).isScanning)
    }

    @Test func trackerReportsOnlyChanges() {
        var tracker = SdkStateTracker(Self.ready)
        #expect(tracker.update { $0.discoveryRunning = true } == nil)
        let change = tracker.update { $0.adapterPowered = false }
        #expect(change?.states == [.bleErrorDisabled])
        #expect(tracker.update { $0.adapterPowered = false } == nil)
        #expect(tracker.update { $0.featureSyncErrors = ["aperio"] }?.featureSyncErrors == ["aperio"])
    }
}

/// What bluetoothd's `Adapter1.Roles` says an adapter can do (issue #38, part 3).
@Suite("Adapter fitness")
struct AdapterFitnessTests {
    @Test func anLECentralIsFitAndAnUnsaidOneGetsTheBenefitOfTheDoubt() {
        #expect(AdapterFitness.problem(roles: ["central", "peripheral", "central-peripheral"]) == nil)
        #expect(AdapterFitness.problem(roles: ["central"]) == nil)
        #expect(AdapterFitness.problem(roles: nil) == nil)
    }

    @Test func noLEOrNoCentralRoleIsUnfitWithTheReason() {
        #expect(AdapterFitness.problem(roles: [])?.contains("BR/EDR-only") == true)
        #expect(AdapterFitness.problem(roles: ["peripheral"])?.contains("no LE central role") == true)
    }
}
