import Testing

@testable import AccessDaemon

/// The prompt's text names the reader and the site (issue #13, item 4): the SDK's
/// `authenticationDetails(readerName)`, from a template in `[prompts]`.
@Suite("Prompt text", .timeLimit(.minutes(5)))
struct PromptTextTests {
    @Test func placeholdersAreFilled() {
        #expect(
            PromptText.render(
                "PIN for {reader} ({readerId}) at {site}", readerName: "Front door", readerID: "00002A01",
                siteName: "Head office") == "PIN for Front door (00002A01) at Head office")
        #expect(
            PromptText.render("PIN for {reader}", readerName: nil, readerID: "00002A01", siteName: nil)
                == "PIN for 00002A01")
        #expect(PromptText.render("{other} stays", readerName: "", readerID: "1", siteName: nil) == "{other} stays")
    }

    /// Through the engine: the event and `secondFactor.list` carry the text as rendered.
    @Test func thePromptEventCarriesTheRenderedText() async throws {
        let shell = try ShellHarness(secondFactor: true) { $0.secondFactorPrompt = "PIN for {reader} at {site}" }
        let (answer, request) = try await shell.accessWaitingForAPin()
        let prompt = try await shell.waitForEvent("secondFactor.required")
        #expect(prompt["prompt"] == "PIN for 00002A01 at Head office")
        let listed = try await shell.call("secondFactor.list").get()["prompts"]?.array?.first
        #expect(listed?["prompt"] == "PIN for 00002A01 at Head office" && listed?["request"] == .string(request))
        _ = await shell.call("secondFactor.cancel", ["request": .string(request)])
        #expect(await answer.value.failureData?["error"] == "userCancelled")
        await shell.stop()
    }
}
