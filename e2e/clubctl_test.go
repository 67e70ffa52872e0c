package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The operator's tools, proven on the running stack: these tests build
// cmd/clubctl and run the binary against the stack under test (by default
// the local cloud provisioned from infra/template.yaml), as an operator
// runs it.

var clubctlDir string

// clubctlBinary builds cmd/clubctl once, into clubctlDir (removed when the
// suite ends).
var clubctlBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "club-e2e-clubctl-")
	if err != nil {
		return "", err
	}
	clubctlDir = dir
	bin := filepath.Join(dir, "clubctl")
	args := []string{"build", "-o", bin}
	if tags := functionTags(); len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "./cmd/clubctl")...)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clubctl: %w\n%s", err, out)
	}
	return bin, nil
})

// clubctlCommand returns the command running the built binary with args and
// the stack file, for a test that drives the process itself.
func clubctlCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := clubctlBinary()
	require.NoError(t, err)
	return exec.Command(bin, append(args, "--stack-file", stack.path)...)
}

// deadLetters puts n dead letters into a DLQ, as the notifier writes them:
// the original body and attributes, and its own. Each body is an
// enrollment.created event of an enrollment that does not exist, so that a
// redelivered one comes back to the DLQ, with the notifier's own code.
func deadLetters(t *testing.T, queue string, n int) map[string]bool {
	t.Helper()
	bodies := map[string]bool{}
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	// With the SDK's retries: a batch whose answer was lost is sent again
	// (AWS carries a retried SendMessageBatch out again), and the copies
	// are deleted below.
	client := sqs.NewFromConfig(stack.aws)
	before := queueDepth(t, queue)
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			eventID, enrollmentID := uuid.NewString(), fmt.Sprintf("ghost-%s-%d", runID, j)
			body := fmt.Sprintf(`{"event_id":%q,"type":"enrollment.created","schema_version":2,"aggregate_id":%q,"occurred_at":%q,"data":{"enrollment_id":%q,"class_id":"class-ghost","student_id":"student-ghost"}}`,
				eventID, enrollmentID, time.Now().UTC().Format(time.RFC3339), enrollmentID)
			bodies[body] = true
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body),
				MessageAttributes: map[string]sqstypes.MessageAttributeValue{
					"type": str("enrollment.created"), "event_id": str(eventID),
					"dlq_code": str("retries_exhausted"), "dlq_reason": str("provider unavailable"), "receive_count": str("8"),
					"source_queue": str(stack.file.Queues["NotificationsQueue"]),
				},
			})
		}
		out, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(stack.file.Queues[queue]), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
	keepOneCopy(t, queue)
	require.Equal(t, before+n, queueDepth(t, queue), "each dead letter sent once")
	return bodies
}

// keepOneCopy deletes every copy of a body in the queue but one, and makes
// the kept ones visible again: a SendMessageBatch retried after its answer
// was lost sent its messages twice.
func keepOneCopy(t *testing.T, queue string) {
	t.Helper()
	url := aws.String(stack.file.Queues[queue])
	kept := map[string]bool{}
	var handles []string
	for {
		got, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 300, WaitTimeSeconds: 1})
		require.NoError(t, err)
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			if !kept[aws.ToString(m.Body)] {
				kept[aws.ToString(m.Body)] = true
				handles = append(handles, aws.ToString(m.ReceiptHandle))
				continue
			}
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	for _, h := range handles {
		_, err := stack.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
		require.NoError(t, err)
	}
}

// seenLetter is a dead letter as drainDLQ found it.
type seenLetter struct {
	body, code string
	// original is the source message the consumer dead-lettered
	// (original_message_id); "" for a letter no consumer wrote.
	original string
}

// drainDLQ receives and deletes everything in a DLQ.
func drainDLQ(t *testing.T, queue string) []seenLetter {
	t.Helper()
	var out []seenLetter
	url := aws.String(stack.file.Queues[queue])
	// SQS delivers at least once: a message deleted may be received again,
	// under its own message id, and is counted once.
	received := map[string]bool{}
	for queueDepth(t, queue) > 0 {
		got, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1,
		})
		require.NoError(t, err)
		for _, m := range got.Messages {
			if !received[aws.ToString(m.MessageId)] {
				out = append(out, seenLetter{body: *m.Body, code: attr(m, "dlq_code"), original: attr(m, "original_message_id")})
			}
			received[aws.ToString(m.MessageId)] = true
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	return out
}

// Must-show 4: `clubctl dlq redrive` moving 1,000 dead letters at 50/s,
// interrupted by SIGINT in the middle: it stops cleanly and says how many
// it moved; every message is then either back (and, its enrollment being
// unknown, dead-lettered again by the notifier, with the notifier's code) or
// still in the DLQ untouched: none lost, none doubled.
func TestClubctlRedriveInterruptedLosesAndDoublesNothing(t *testing.T) {
	const total = 1000
	emptyDLQ(t, "NotificationsDLQ")
	sent := deadLetters(t, "NotificationsDLQ", total)

	// SQS delivers at least once: when the DLQ's delete of a moved letter
	// is the copy that survives (the adversary's sqs.redeliver), that letter
	// is moved again or stays there too; a send whose answer was lost
	// (any.lost_answer) is sent again by the SDK. Those are AWS's, not the
	// redrive's, and are allowed only as often as the adversary did them.
	stats, _ := localStats(t)
	againBefore := stats.Adversary.Counts["sqs.redeliver"] + stats.Adversary.Counts["any.lost_answer"]
	cmd := clubctlCommand(t, "dlq", "redrive", "--queue", "notifications", "--rate", "50/s")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	progress, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var stderr bytes.Buffer
	counted := regexp.MustCompile(`\((\d+)/\d+`)
	sc := bufio.NewScanner(progress)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) { // the bar redraws with \r
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	interrupted := false
	for sc.Scan() {
		line := sc.Text()
		stderr.WriteString(line + "\n")
		if m := counted.FindStringSubmatch(line); m != nil && !interrupted {
			if n, _ := strconv.Atoi(m[1]); n >= 300 {
				require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
				interrupted = true
			}
		}
	}
	err = cmd.Wait()
	require.True(t, interrupted, "the progress reached 300 (stderr: %s)", stderr.String())
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	require.Equal(t, 1, ee.ExitCode())
	m := regexp.MustCompile(`interrupted after moving (\d+) messages; the rest are still in NotificationsDLQ, none lost or doubled`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	moved, _ := strconv.Atoi(m[1])
	require.Greater(t, moved, 0)
	require.Less(t, moved, total, "stopped in the middle")

	// Every moved message reaches the notifier and comes back.
	var source, dlq int
	eventually(t, 2*time.Minute, "every moved message handled and back in the DLQ", func() bool {
		source, dlq = queueDepth(t, "NotificationsQueue"), queueDepth(t, "NotificationsDLQ")
		return source == 0 && dlq >= total
	})
	t.Logf("moved %d; source %d, DLQ %d", moved, source, dlq)
	// Each body is accounted for: untouched (the letter we wrote, once) or
	// moved once (it reached the source queue under one message id, and the
	// notifier dead-lettered that message: enrollment_not_found). A
	// consumer may dead-letter one source message twice (delivery is at
	// least once); that is not the redrive's doing and is counted apart.
	untouched, moves := map[string]int{}, map[string]map[string]bool{}
	redelivered := 0
	seen := map[seenLetter]bool{}
	for _, l := range drainDLQ(t, "NotificationsDLQ") {
		require.True(t, sent[l.body], "only what was sent: %s", l.body)
		switch l.code {
		case "retries_exhausted":
			require.Empty(t, l.original, "an untouched letter")
			untouched[l.body]++
		case "enrollment_not_found":
			require.NotEmpty(t, l.original, "the notifier names the source message")
			if seen[l] {
				redelivered++
			}
			if moves[l.body] == nil {
				moves[l.body] = map[string]bool{}
			}
			moves[l.body][l.original] = true
		default:
			t.Fatalf("unexpected dead letter %+v", l)
		}
		seen[l] = true
	}
	var lost, doubled []string
	both := 0 // moved and still there
	for body := range sent {
		n, m := untouched[body], len(moves[body])
		if n > 0 && m > 0 {
			both++
		}
		switch {
		case n+m == 0:
			lost = append(lost, body)
		case n+m > 1:
			doubled = append(doubled, fmt.Sprintf("untouched %d, moved %d: %s", n, m, body))
		}
	}
	require.Empty(t, lost, "none lost")
	stats, _ = localStats(t)
	again := int(stats.Adversary.Counts["sqs.redeliver"] + stats.Adversary.Counts["any.lost_answer"] - againBefore)
	require.LessOrEqual(t, len(doubled), again, "none doubled but by AWS delivering or sending again: %v", doubled)
	require.GreaterOrEqual(t, moved, len(moves), "the moved ones went through the notifier")
	require.LessOrEqual(t, moved-len(moves), again, "each moved once but by AWS delivering or sending again")
	require.Len(t, untouched, total-len(moves)+both, "the others were not touched")
	t.Logf("moved %d, untouched %d; %d dead letters written twice by the notifier for one source message (at-least-once delivery)", len(moves), len(untouched), redelivered)
}

// `clubctl replay` delivers a stored event again, with its original
// event_id, to one consumer: the consumer sees a duplicate and nothing
// changes.
func TestClubctlReplayChangesNothing(t *testing.T) {
	classID, teacher := newClass(t, 10)
	student := newUser(t, "student")
	r := enroll(t, student, classID, id("key"))
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	eventually(t, 30*time.Second, "counted", func() bool { return enrollmentsTotal(t, teacher, classID) == 1 })
	var env struct {
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(outboxEnvelope(t, r.str("enrollment_id"))), &env))

	code, stdout, stderr := clubctl(t, "replay", "--consumer", "analytics", "--from", env.EventID, "--max", "1", "--rate", "0", "--json")
	require.Equal(t, 0, code, stderr)
	var out struct {
		Sent   int `json:"sent"`
		Events []struct {
			EventID string `json:"event_id"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	require.Equal(t, 1, out.Sent)
	drained(t, "AnalyticsQueue")
	require.Equal(t, 1, storedEnrollmentsTotal(t, classID), "a duplicate changes nothing")
	require.Zero(t, queueDepth(t, "AnalyticsDLQ"))
}

// `clubctl status` and `clubctl reconcile` read the running stack.
func TestClubctlStatusAndReconcile(t *testing.T) {
	code, stdout, stderr := clubctl(t, "status", "--sample", "0", "--json")
	require.Equal(t, 0, code, stderr)
	var st struct {
		Queues []struct {
			Name      string `json:"name"`
			Class     string `json:"class"`
			AgeSource string `json:"age_source"`
		} `json:"queues"`
		Alarms []any `json:"alarms"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &st), stdout)
	classes := map[string]string{}
	for _, q := range st.Queues {
		classes[q.Name] = q.Class
		require.NotEqual(t, "peek", q.AgeSource, "%s: no receive to measure an age", q.Name)
	}
	require.Equal(t, "urgent", classes["NotificationsQueue"])
	require.Equal(t, "bulk", classes["ExportsQueue"])
	require.NotNil(t, st.Alarms, "the alarms were read")

	code, stdout, stderr = clubctl(t, "reconcile", "--json")
	require.Equal(t, 0, code, stderr)
	var rec struct {
		Purchases []struct {
			Status   string `json:"status"`
			NextStep string `json:"next_step"`
		} `json:"purchases"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rec), stdout)
	for _, p := range rec.Purchases {
		require.NotEmpty(t, p.NextStep, "every purchase to look at has a next step")
	}
}
