package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
)

// consumers are the functions behind the three consumer queues, in the
// order the report lists them, with the queue each reads.
var consumers = []struct{ name, function, queue string }{
	{"analytics", "AnalyticsFunction", "AnalyticsQueue"},
	{"roster", "RosterFunction", "RosterQueue"},
	{"notifier", "NotifierFunction", "NotificationsQueue"},
}

// boundary is one row of exercise 1: where the system stops, and what must
// happen next.
type boundary struct {
	name string
	// rules arms the fault (nil: no fault, see replay).
	rules func(t *testing.T) []fault.Rule
	// replay re-delivers the event to every consumer after the pipeline
	// settled, as an operator's replay does.
	replay bool
	// deliveries is how often each consumer (analytics, roster, notifier)
	// must receive the event.
	deliveries [3]int
	// client checks what the repeating client saw.
	client func(t *testing.T, e enrollment)
	// fired is the point where the fault must have fired, and how often.
	fired      fault.Point
	firedTimes int
	// For the report.
	fault, repeats, recognised string
}

func crashOnce(p fault.Point, functions ...string) func(t *testing.T) []fault.Rule {
	return func(t *testing.T) []fault.Rule {
		var rules []fault.Rule
		for _, fn := range functions {
			rules = append(rules, fault.Rule{Point: p, Function: function(t, fn), Action: fault.Crash, Times: 1})
		}
		return rules
	}
}

func answeredAfterOneFailure(replayed bool) func(t *testing.T, e enrollment) {
	return func(t *testing.T, e enrollment) {
		require.Equal(t, []string{"500"}, e.answers, "the crash fails the request the client sent")
		require.Equal(t, replayed, e.replayed, "Idempotent-Replayed")
	}
}

func answeredAtOnce(t *testing.T, e enrollment) {
	require.Empty(t, e.answers, "the answer does not wait for anything after the commit")
	require.False(t, e.replayed)
}

var allConsumers = []string{"AnalyticsFunction", "RosterFunction", "NotifierFunction"}

// The source's first exercise: stop the system at each boundary and compare
// business facts. Each row crashes one place once (a process exit, as a
// killed Lambda sandbox) and checks that the enrollment exists iff its
// intent does, that the counter changed once and that one mail went out.
func TestExercise1(t *testing.T) {
	boundaries := []boundary{
		{
			name: "1. Before the enrollment commit", rules: crashOnce(fault.APIBeforeCommit, "ApiFunction"),
			deliveries: [3]int{1, 1, 1}, client: answeredAfterOneFailure(false), fired: fault.APIBeforeCommit, firedTimes: 1,
			fault:      "`api.before_commit`: the API process exits before its transaction",
			repeats:    "the client, with the same `Idempotency-Key`",
			recognised: "nothing to recognise: nothing was written, so the retry is the first commit",
		},
		{
			name: "2a. After the commit, before the answer", rules: crashOnce(fault.APIAfterCommit, "ApiFunction"),
			deliveries: [3]int{1, 1, 1}, client: answeredAfterOneFailure(true), fired: fault.APIAfterCommit, firedTimes: 1,
			fault:      "`api.after_commit`: the API process exits after the commit, before the HTTP answer",
			repeats:    "the client, with the same `Idempotency-Key`",
			recognised: "the idempotency record: the retry gets the original 201 with `Idempotent-Replayed: true`",
		},
		{
			name: "2b. After the commit, before publish", rules: crashOnce(fault.RelayBeforePublish, "RelayFunction"),
			deliveries: [3]int{1, 1, 1}, client: answeredAtOnce, fired: fault.RelayBeforePublish, firedTimes: 1,
			fault:      "`relay.before_publish`: the relay exits holding the new outbox row",
			repeats:    "the stream (Lambda retries the batch); the sweeper if the stream gives up",
			recognised: "nothing was published, so there is no duplicate; the outbox row kept the intent",
		},
		{
			name: "3a. Uncertain publish confirm", rules: crashOnce(fault.RelayAfterPublish, "RelayFunction"),
			deliveries: [3]int{2, 2, 2}, client: answeredAtOnce, fired: fault.RelayAfterPublish, firedTimes: 1,
			fault:      "`relay.after_publish`: the broker took the event; the relay exits before marking the row",
			repeats:    "the stream retries the batch and publishes the same `event_id` again",
			recognised: "each consumer: the inbox row (analytics), the roster entry's record of the event (roster), the notification already `sent` (notifier)",
		},
		{
			name: "3b. Published and marked, not reported", rules: crashOnce(fault.RelayAfterMark, "RelayFunction"),
			deliveries: [3]int{2, 2, 2}, client: answeredAtOnce, fired: fault.RelayAfterMark, firedTimes: 1,
			fault:      "`relay.after_mark`: the relay exits after marking, before reporting success",
			repeats:    "the stream retries the batch; the mark is a conditional no-op",
			recognised: "each consumer, as in 3a",
		},
		{
			name: "4. After receive, before the consumer's commit", rules: crashOnce(fault.ConsumerBeforeCommit, allConsumers...),
			deliveries: [3]int{2, 2, 2}, client: answeredAtOnce, fired: fault.ConsumerBeforeCommit, firedTimes: 3,
			fault:      "`consumer.before_commit`: each consumer exits once with the event received, nothing committed",
			repeats:    "SQS: the message returns after the visibility timeout",
			recognised: "nothing to recognise: the first commit happens on the redelivery",
		},
		{
			name: "5. After the consumer's commit, before the ack", rules: crashOnce(fault.ConsumerAfterCommit, allConsumers...),
			deliveries: [3]int{2, 2, 2}, client: answeredAtOnce, fired: fault.ConsumerAfterCommit, firedTimes: 3,
			fault:      "`consumer.after_commit`: each consumer exits once after its commit, before the ack",
			repeats:    "SQS redelivers after the visibility timeout",
			recognised: "the inbox row `INBOX#analytics#<event_id>` (analytics); the entry's `created_event`/`cancelled_event` (roster); the notification already `sent` (notifier)",
		},
		{
			name: "6. A manual replay after the ack", replay: true,
			deliveries: [3]int{2, 2, 2}, client: answeredAtOnce,
			fault:      "none: the stored event is sent again, with its `event_id`, to every consumer queue",
			repeats:    "an operator (`clubctl replay`), within the inbox retention",
			recognised: "the inbox rows, the roster entries' records and the notification status, as in 5",
		},
		{
			name: "Mail: accepted, not recorded", rules: crashOnce(fault.NotifierAfterSend, "NotifierFunction"),
			deliveries: [3]int{1, 1, 2}, client: answeredAtOnce, fired: fault.NotifierAfterSend, firedTimes: 1,
			fault:      "`notifier.after_send`: the provider accepted the mail; the notifier exits before recording it",
			repeats:    "SQS redelivers; the notifier sends again under `notify-<event_id>`",
			recognised: "the mail provider, by `Idempotency-Key`: same message, nothing new sent",
		},
	}
	for _, b := range boundaries {
		t.Run(b.name, func(t *testing.T) { runBoundary(t, b) })
	}
}

func runBoundary(t *testing.T, b boundary) {
	quiet(t, 90*time.Second)
	classID, teacher := newClass(t, 5)
	student := mustUser(t, "student")
	var rules []fault.Rule
	if b.rules != nil {
		rules = b.rules(t)
	}
	// Armed even when empty: it resets the pass counts.
	armFaults(t, fault.Plan{Seed: stack.seed, Rules: rules})

	e, err := enroll(context.Background(), student, classID, id("key"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, e.status, string(e.raw))
	b.client(t, e)

	intent := intentOf(t, e.str("enrollment_id"))
	if b.replay {
		deliveredTimes(t, intent.EventID, [3]int{1, 1, 1})
		quiet(t, 60*time.Second)
		// The operator's replay, with the operator's tool.
		for _, c := range consumers {
			code, stdout, stderr := runClubctl(t, "replay", "--consumer", c.queue, "--from", intent.EventID, "--max", "1", "--rate", "0", "--json")
			require.Equal(t, 0, code, "clubctl replay to %s: %s", c.queue, stderr)
			var out struct {
				Sent int `json:"sent"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
			require.Equal(t, 1, out.Sent, "clubctl replay sent the event to %s", c.queue)
		}
	}
	deliveredTimes(t, intent.EventID, b.deliveries)
	quiet(t, 60*time.Second)

	st := faults(t)
	if b.fired != "" {
		require.Equal(t, b.firedTimes, st.FiredCount(b.fired, fault.Crash), "the fault fired as armed")
		require.Len(t, st.Fired, b.firedTimes, "and nothing else fired")
	}
	// Delivery is at least once: more deliveries than the boundary causes
	// are possible (and harmless); fewer would mean the repeat did not
	// happen.
	ev := faultsOf(t, intent.EventID)
	got := deliveries(t, ev)

	f := readFacts(t, teacher, classID, enrollmentsByClass(t), intentsByClass(t), mailCounts(t))
	require.Empty(t, f.check([]string{student.sub}), "the three facts")
	for _, q := range deadLetterQueues {
		require.Zero(t, queueDepth(t, q), "nothing in %s", q)
	}

	report.addBoundary(boundaryRow{
		name: b.name, fault: b.fault, repeats: b.repeats, recognised: b.recognised,
		observed: observed(e, ev, got, f),
	})
}

// deliveries is how often each consumer received the event: every delivery
// passes consumer.before_commit.
func deliveries(t *testing.T, st fault.State) [3]int {
	var out [3]int
	for i, c := range consumers {
		out[i] = int(st.PassCount(fault.ConsumerBeforeCommit, function(t, c.function)))
	}
	return out
}

func deliveredTimes(t *testing.T, eventID string, want [3]int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("deliveries of %s to analytics, roster, notifier reach %v", eventID, want), func() bool {
		got := deliveries(t, faultsOf(t, eventID))
		for i := range got {
			if got[i] < want[i] {
				return false
			}
		}
		return true
	})
}

// observed words what the run showed, for the report.
func observed(e enrollment, st fault.State, got [3]int, f classFacts) string {
	client := "201"
	if len(e.answers) > 0 {
		client = strings.Join(e.answers, " → ") + " → 201"
	}
	if e.replayed {
		client += " (replayed)"
	}
	publishes := st.PassCount(fault.RelayAfterPublish, "")
	mail := 0
	for _, n := range f.mails {
		mail += n
	}
	status := "?"
	if len(f.enrollments) == 1 {
		status = f.enrollments[0].NotificationStatus
	}
	return fmt.Sprintf("client %s; publishes %d; deliveries %d/%d/%d; enrollments %d, intents %d; counter +%d; roster %d; mails %d (%s)",
		client, publishes, got[0], got[1], got[2], len(f.enrollments), len(f.intents), f.counted, len(f.roster), mail, status)
}

// intentOf returns the outbox row of an enrollment's enrollment.created
// event: its event id and the envelope the relay publishes.
func intentOf(t *testing.T, enrollmentID string) intentRow {
	t.Helper()
	for _, rows := range intentsByClass(t) {
		for _, r := range rows {
			if r.AggregateID == enrollmentID {
				return r
			}
		}
	}
	t.Fatalf("no outbox row for enrollment %s", enrollmentID)
	return intentRow{}
}
