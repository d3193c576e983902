/// How long a host test waits for something that should happen (a line, an event, a call, a
/// status) before it fails. Longer than the whole host phase takes (about 50 s on 2 cores,
/// every daemon of the suite starting at once), so a test starved by the others still passes;
/// a real hang still fails, after it. Seen in CI at 30 s: a follow's first line and a shell's
/// discovery both starved past it. Waits that expect nothing (an absence) keep their own,
/// shorter, times.
let readinessCeiling: Duration = .seconds(120)
