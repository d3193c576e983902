import AccessCore
import Testing

/// Action ids name the SDK's `ReaderActionType`s, one for one (issue #13: 6–9 were one
/// `alarmMode` where the SDK has four types).
@Suite("Reader action types", .timeLimit(.minutes(5)))
struct ReaderActionTypeTests {
    @Test func everyIdHasTheSDKsName() {
        let names = (-1...11).map { ReaderActionType(id: Int8($0)).description }
        #expect(
            names == [
                "requestAccess", "enumerate", "arm", "disarm", "mode1", "mode2", "schedule",
                "armMode1", "armMode2", "disarmMode1", "disarmMode2", "output", "output",
            ])
        #expect(ReaderActionType(id: -128).description == "output")
    }
}
