// Package fault puts named fault points at the boundaries where a process of
// the Club backend can stop (docs/principles.md §9): before and after the enrollment
// commit, around the relay's publish and mark, around a consumer's commit,
// after the mail provider accepted a message, in the saga, and before the
// exporter writes its file. The
// reliability suite (package reliability) crashes, fails or delays the
// system at each of them and then checks business facts, not delivery
// counts.
//
// # Build tag
//
// Fault points exist only in programs built with the faults tag
// (go build -tags faults; club-local --tags faults; localcloud.Config
// BuildTags). In every other build [Inject] is an empty function the
// compiler inlines away: a normal build carries no fault code, no network
// call and no configuration.
//
// # Control
//
// A faults build asks a control endpoint, at every point it passes, what to
// do there. The local cloud serves it on its AWS endpoint ([Registry]):
//
//	POST   <endpoint>/_club/faults       arm a Plan (replaces the armed one, resets the counts)
//	GET    <endpoint>/_club/faults       the armed plan, per-rule counts, passes and the faults fired
//	GET    <endpoint>/_club/faults?key=K the same, passes and faults of one key only
//	DELETE <endpoint>/_club/faults       disarm everything
//	POST   <endpoint>/_club/faults/hit   {point, function, key} → Decision (what the program calls)
//
// A function finds the endpoint through CLUB_FAULTS_URL or, when that is not
// set, AWS_ENDPOINT_URL + "/_club/faults" (the local cloud gives every
// function AWS_ENDPOINT_URL); it names itself with AWS_LAMBDA_FUNCTION_NAME.
// The instrument reads these itself, like the clubprofile instrument of
// package obs, so that normal wiring carries nothing of it. A faults build
// that cannot reach the endpoint runs without faults and says so once on
// standard error.
//
// # Plans and decisions
//
// A [Plan] is a seed and an ordered list of rules. A rule names a point,
// optionally one function, an action (crash, error or delay), a probability
// and an optional limit on how often it fires (1: once). At each pass the
// rules for that point are tried in order and the first that fires decides.
// Whether a rule fires is a pure function of the seed, the rule's position,
// the point, the function, the key the program passes (an idempotency key,
// an event id) and how many times that key passed that point before: the
// same seed gives the same decisions for the same keys, whatever the
// interleaving of processes, so a failing run can be replayed with its seed.
//
// # Actions
//
//   - crash: the process exits at once with [ExitCode], as a process killed
//     mid-invocation. The local cloud fails the invocation
//     (Runtime.ExitError) and starts a new process, as Lambda does.
//   - error: Inject returns an [*Error], which each caller's edge classifies
//     as a transient infrastructure failure (HTTP 500, SQS retry with
//     backoff, stream retry).
//   - delay: Inject sleeps for the rule's delay (or until ctx ends) and
//     then lets the program continue.
package fault
