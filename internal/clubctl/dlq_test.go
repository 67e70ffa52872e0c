package clubctl

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/queues"
)

func deadLetterAttrs(code, reason, eventID string) map[string]string {
	return map[string]string{"type": "enrollment.created", "event_id": eventID, "dlq_code": code, "dlq_reason": reason, "receive_count": "8"}
}

func (e *stackEnv) depth(t *testing.T, queue string) int64 {
	t.Helper()
	d, err := queues.GetDepth(context.Background(), e.sqs, e.stack.Queues[queue])
	require.NoError(t, err)
	return d.Total()
}

// bodies counts a queue's messages by body, consuming them.
func (e *stackEnv) bodies(t *testing.T, queue string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.stack.Queues[queue]), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			got[*m.Body]++
			_, err := e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.stack.Queues[queue]), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
}

func TestDLQListAndShow(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.send(t, "NotificationsDLQ", 2, deadLetterAttrs("retries_exhausted", "mail provider: 503 Service Unavailable", "evt-1"))
	e.send(t, "NotificationsDLQ", 1, deadLetterAttrs("malformed_event", "decode envelope:\n unexpected end of JSON input", "evt-2"))
	e.send(t, "RosterDLQ", 1, nil) // moved by the redrive policy: no reason attached

	code, stdout, stderr := runWith(t, e.at(90*time.Second), "dlq", "list", "--stack-file", e.stackFile)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `NotificationsDLQ\s+NotificationsQueue\s+3\s+1m3\ds\s+malformed_event×1 retries_exhausted×2`, stdout)
	require.Regexp(t, `RosterDLQ\s+RosterQueue\s+1\s+1m3\ds\s+-×1`, stdout)
	require.Regexp(t, `AnalyticsDLQ\s+AnalyticsQueue\s+0\s+-\s+-`, stdout)
	require.NotContains(t, stdout, "RelayFailures", "no DLQ, not listed")

	code, stdout, stderr = runWith(t, e.at(0), "dlq", "show", "--stack-file", e.stackFile, "--queue", "notifications")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `retries_exhausted\s+mail provider: 503 Service Unavailable`, stdout)
	require.Regexp(t, `malformed_event\s+decode envelope: unexpected end of JSON input\n`, stdout, "reasons stay on one line")

	code, stdout, stderr = runWith(t, e.at(0), "dlq", "show", "--stack-file", e.stackFile, "--queue", "NotificationsDLQ", "--json")
	require.Equal(t, 0, code, stderr)
	var letters []deadLetter
	require.NoError(t, json.Unmarshal([]byte(stdout), &letters))
	codes := map[string]int{}
	for _, l := range letters {
		codes[l.Code+" "+l.EventID]++
		require.NotEmpty(t, l.Reason)
	}
	require.Equal(t, map[string]int{"retries_exhausted evt-1": 2, "malformed_event evt-2": 1}, codes)
	require.Len(t, letters, 3)

	code, stdout, stderr = runWith(t, e.at(0), "dlq", "show", "--stack-file", e.stackFile, "--queue", "notifications", "--max", "2", "--json")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &letters))
	require.Len(t, letters, 2, "--max bounds the look")

	require.EqualValues(t, 3, e.depth(t, "NotificationsDLQ"), "looking deletes nothing")
}

func TestDLQRedrive(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.send(t, "AnalyticsDLQ", 25, deadLetterAttrs("retries_exhausted", "throttled", "evt"))

	// A dry run lists and moves nothing.
	code, stdout, stderr := runWith(t, e.at(0), "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "analytics", "--dry-run", "--max", "5", "--rate", "5/s")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "dry run: would move 5 of 25 messages from AnalyticsDLQ to AnalyticsQueue, about 1s at 5/s")
	require.Equal(t, 5+1, strings.Count(stdout, "retries_exhausted")+1, "five listed")
	require.EqualValues(t, 25, e.depth(t, "AnalyticsDLQ"))
	require.Zero(t, e.depth(t, "AnalyticsQueue"))

	// A bounded batch first, then the rest.
	code, stdout, stderr = runWith(t, e.at(0), "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "analytics", "--max", "10", "--rate", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "moved 10 messages from AnalyticsDLQ to AnalyticsQueue")
	require.Contains(t, stderr, "AnalyticsDLQ → AnalyticsQueue", "a progress bar on stderr")

	code, stdout, stderr = runWith(t, e.at(0), "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "analytics", "--json", "--rate", "100/s")
	require.Equal(t, 0, code, stderr)
	var out redriveOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Equal(t, redriveOutput{Queue: "AnalyticsQueue", DLQ: "AnalyticsDLQ", Moved: 15, Drained: true, Seconds: out.Seconds}, out)
	require.Zero(t, e.depth(t, "AnalyticsDLQ"))
	require.Len(t, e.bodies(t, "AnalyticsQueue"), 25)
}

func TestDLQRedriveRefusesWhileTheQueueIsLate(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.send(t, "NotificationsDLQ", 3, deadLetterAttrs("retries_exhausted", "timeout", "evt"))
	e.send(t, "NotificationsQueue", 4, nil) // live traffic, 2 minutes old by the clock below
	late := e.at(2 * time.Minute)

	code, stdout, stderr := runWith(t, late, "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "notifications")
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "refused: NotificationsQueue's oldest message is 2m0s old, over the urgent class limit of 1m0s")
	require.Contains(t, stderr, "--force")
	require.EqualValues(t, 3, e.depth(t, "NotificationsDLQ"), "nothing moved")

	code, stdout, _ = runWith(t, late, "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "notifications", "--dry-run")
	require.Equal(t, 3, code)
	require.Contains(t, stdout, "dry run: would move 3 of 3", "the dry run still lists")

	code, stdout, stderr = runWith(t, late, "dlq", "redrive", "--stack-file", e.stackFile, "--queue", "notifications", "--force", "--rate", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "moved 3 messages")
	require.EqualValues(t, 7, e.depth(t, "NotificationsQueue"))
}

func TestDLQRedriveInterrupted(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.send(t, "RosterDLQ", 40, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // Ctrl-C once some have moved
		// No require here: a failed assertion must not run off the test's
		// goroutine. A depth that cannot be read keeps polling; the
		// command's own result is what the test checks.
		for ctx.Err() == nil {
			d, err := queues.GetDepth(ctx, e.sqs, e.stack.Queues["RosterQueue"])
			if err == nil && d.Total() >= 10 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	g := newGlobals(&out, &errb)
	e.at(0)(g)
	code := execute(ctx, g, []string{"dlq", "redrive", "--stack-file", e.stackFile, "--queue", "roster", "--rate", "20/s"})
	require.Equal(t, 1, code, errb.String())
	require.Regexp(t, `clubctl: interrupted after moving \d+ messages; the rest are still in RosterDLQ, none lost or doubled: run the same command to continue`, errb.String())

	moved, left := e.bodies(t, "RosterQueue"), e.bodies(t, "RosterDLQ")
	require.Less(t, len(moved), 40)
	require.Len(t, moved, 40-len(left))
	for body := range moved {
		require.Zero(t, left[body], "%s in both queues", body)
	}
}

func TestDLQErrors(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown queue", []string{"dlq", "show", "--queue", "emails"}, 1, `unknown queue "emails" (known: AnalyticsQueue, NotificationsQueue, RelayFailuresQueue, RosterQueue)`},
		{"no DLQ", []string{"dlq", "redrive", "--queue", "RelayFailuresQueue"}, 1, "RelayFailuresQueue has no dead-letter queue"},
		{"missing queue", []string{"dlq", "redrive"}, 2, `required flag(s) "queue" not set`},
		{"bad rate", []string{"dlq", "redrive", "--queue", "roster", "--rate", "fast"}, 2, `--rate "fast": want messages per second, like 50/s`},
		{"batch too big", []string{"dlq", "redrive", "--queue", "roster", "--batch", "11"}, 2, "--batch 11 must be between 1 and 10"},
		{"negative max", []string{"dlq", "redrive", "--queue", "roster", "--max", "-1"}, 2, "--max -1 must not be negative"},
		{"zero show max", []string{"dlq", "show", "--queue", "roster", "--max", "0"}, 2, "--max 0 must be positive"},
		{"unknown subcommand", []string{"dlq", "purge"}, 2, `unknown command "purge" for "clubctl dlq"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runWith(t, e.at(0), append(tt.args, "--stack-file", e.stackFile)...)
			require.Equal(t, tt.wantCode, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tt.wantErr)
			require.Equal(t, 1, strings.Count(stderr, "clubctl: "), "one error line: %q", stderr)
		})
	}
}
