package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// notification is the notification of an enrollment as GET /enrollments/{id}
// shows it.
type notification struct {
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

func notificationOf(t *testing.T, student user, enrollmentID string) notification {
	t.Helper()
	r := call(t, student, http.MethodGet, "/enrollments/"+enrollmentID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	var doc struct {
		Notification notification `json:"notification"`
	}
	require.NoError(t, json.Unmarshal(r.raw, &doc))
	return doc.Notification
}

// queueDepth is every message a queue holds: visible, in flight and
// delayed.
func queueDepth(t *testing.T, queue string) int {
	t.Helper()
	out, err := stack.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(stack.file.Queues[queue]),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	require.NoError(t, err)
	n := 0
	for _, v := range out.Attributes {
		k, err := strconv.Atoi(v)
		require.NoError(t, err)
		n += k
	}
	return n
}

// mailStats are the mail sandbox's counters.
func mailStats(t *testing.T) (sendRequests, faulted float64) {
	t.Helper()
	st := sandbox(t, stack.file.MailURL, http.MethodGet, "/_sandbox/stats", nil)
	faulted, _ = st["faults_injected"].(float64)
	for _, k := range []string{"accepted", "replayed", "rate_limited", "conflicts", "rejected", "faults_injected"} {
		v, _ := st[k].(float64)
		sendRequests += v
	}
	return sendRequests, faulted
}

// Must-show 1: the mail provider fails for far longer than the old budget of
// eight receives (at least 20 probes of it after every mail was handled).
// Nothing reaches NotificationsDLQ; every notification stays pending, its
// attempts counting the calls that reached the provider and the last error
// saying why; the provider is probed, not hammered, and the owed mail waits
// in the parking queue instead of coming back (its attempts stop growing);
// once the provider answers, every mail goes out exactly once, within a
// minute.
// Meanwhile NotificationsPendingAlarm (namespace Club, the notifier's own
// PendingNotificationAge from its EMF lines, Maximum over 60 s) goes to
// ALARM once the mails have been owed longer than the urgent class allows
// and says so on the ops topic, and back to OK after the recovery, once a
// whole period has passed without a mail owed.
func TestMailOwedThroughALongOutage(t *testing.T) {
	// Parallel: it runs after every sequential test, beside the other long
	// waits, none of which sends or counts mail (a mail another test's
	// enrollment owes meanwhile is only delayed; the counts here are of this
	// test's own mails and of NotificationsDLQ, which no parallel test uses).
	t.Parallel()
	const mails, probes = 10, 20
	dlqBefore := queueDepth(t, "NotificationsDLQ")
	alarmNotifications := opsSubscriber(t)
	setMailFaults(t, map[string]any{"mode": "error", "rate": 1})
	classID, _ := newClass(t, mails)
	students := make([]user, mails)
	ids := make([]string, mails)
	for i := range students {
		students[i] = newUser(t, "student")
		r := enroll(t, students[i], classID, id("key"))
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		ids[i] = r.str("enrollment_id")
	}

	attempts := func() (total int) {
		for i, s := range students {
			n := notificationOf(t, s, ids[i])
			require.Equal(t, "pending", n.Status, "a mail inside its retry budget is pending")
			require.Empty(t, mailTo(t, s.email))
			// An attempt is counted before its send: the first one's error
			// is there once it has failed, and from the second attempt on
			// the error of the one before is.
			if n.Attempts > 1 || n.LastError != "" {
				require.Contains(t, n.LastError, "mail provider", "the last error says why")
			}
			total += n.Attempts
		}
		return total
	}
	// Every owed mail waits parked but the probers: the mail whose failure
	// opened an instance's breaker probes for it, and there are at most as
	// many instances as the notifier's MaximumConcurrency.
	const notifierConcurrency = 5
	eventually(t, 5*time.Minute, "every owed mail parked but the probers", func() bool {
		return queueDepth(t, "NotificationsParkingQueue") >= mails-notifierConcurrency
	})
	before := attempts()
	_, faultedBefore := mailStats(t)
	eventually(t, 5*time.Minute, "20 probes of the dead provider", func() bool {
		_, faulted := mailStats(t)
		return int(faulted-faultedBefore) >= probes
	})
	after := attempts()
	_, faultedAfter := mailStats(t)
	calls := int(faultedAfter - faultedBefore)
	t.Logf("outage: %d probes; this test's mails went from %d to %d attempts", calls, before, after)
	require.LessOrEqual(t, after-before, calls, "an attempt is a call to the provider")
	require.LessOrEqual(t, after-before, probes+mails, "parked mail does not come back: only the probers call the provider")
	require.Equal(t, dlqBefore, queueDepth(t, "NotificationsDLQ"), "nothing dead-lettered during the outage")

	const pendingAlarm = "NotificationsPendingAlarm"
	var fired map[string]any
	eventually(t, 3*time.Minute, pendingAlarm+" fires on the ops topic", func() bool {
		fired = notified(alarmNotifications(), pendingAlarm, "ALARM")
		return fired != nil
	})
	require.Contains(t, fired["AlarmDescription"], "docs/runbooks/mail-outage.md", "the notification names the runbook")
	require.Contains(t, fired["NewStateReason"], "Club PendingNotificationAge")
	for i := range students {
		require.Equal(t, "pending", notificationOf(t, students[i], ids[i]).Status, "the alarm fired during the outage")
	}
	firedAt := len(alarmNotifications())

	recovered := time.Now()
	sandbox(t, stack.file.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	eventually(t, 60*time.Second, "every pending mail sent within a minute of recovery", func() bool {
		for i, s := range students {
			if notificationOf(t, s, ids[i]).Status != "sent" {
				return false
			}
		}
		return true
	})
	t.Logf("recovery: every mail sent %s after the provider answered", time.Since(recovered).Round(100*time.Millisecond))
	for i, s := range students {
		msgs := mailTo(t, s.email)
		require.Len(t, msgs, 1, "exactly once")
		require.Contains(t, msgs[0]["text"], ids[i])
		n := notificationOf(t, s, ids[i])
		require.Empty(t, n.LastError, "a sent mail has no last error")
	}
	require.Equal(t, dlqBefore, queueDepth(t, "NotificationsDLQ"))
	eventually(t, 3*time.Minute, pendingAlarm+" back to OK on the ops topic", func() bool {
		cleared := notified(alarmNotifications()[firedAt:], pendingAlarm, "OK")
		return cleared != nil && cleared["OldStateValue"] == "ALARM"
	})
}

// Must-show 2: the provider answers 409 for the event's own key (it holds
// another payload under notify-<event_id>: the first attempt's answer was
// lost and the student changed address before the retry). The message
// reaches NotificationsDLQ with contract_conflict, the notification is not
// sent, and no second mail goes out.
func TestProviderConflictIsDeadLettered(t *testing.T) {
	setMailFaults(t, map[string]any{"mode": "accept_then_drop", "rate": 1})
	classID, _ := newClass(t, 10)
	student := newUser(t, "student")
	r := enroll(t, student, classID, id("key"))
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	enrollmentID := r.str("enrollment_id")
	eventually(t, 30*time.Second, "the answer was lost", func() bool {
		return notificationOf(t, student, enrollmentID).Status == "unknown"
	})
	newAddress := strings.Replace(student.email, "@", ".new@", 1)
	p := call(t, student, http.MethodPut, "/me/profile", map[string]any{"email": newAddress, "display_name": "Moved"})
	require.Equal(t, http.StatusOK, p.status, string(p.raw))
	var env struct {
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(outboxEnvelope(t, enrollmentID)), &env))
	sandbox(t, stack.file.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})

	var dead *sqstypes.Message
	eventually(t, 60*time.Second, "the conflict reached NotificationsDLQ", func() bool {
		for _, m := range receiveAll(t, "NotificationsDLQ") {
			if attr(m, "event_id") == env.EventID {
				dead = &m
				return true
			}
		}
		return false
	})
	require.Equal(t, "contract_conflict", attr(*dead, "dlq_code"))
	require.Contains(t, attr(*dead, "dlq_reason"), "idempotency_key_reused")
	n := notificationOf(t, student, enrollmentID)
	require.NotEqual(t, "sent", n.Status)
	require.Contains(t, n.LastError, "contract conflict")
	require.Len(t, mailTo(t, student.email), 1, "the first payload, accepted once")
	require.Empty(t, mailTo(t, newAddress), "no second mail under another payload")
	// Leave the dead letter for no other test to trip on.
	_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{
		QueueUrl: aws.String(stack.file.Queues["NotificationsDLQ"]), ReceiptHandle: dead.ReceiptHandle,
	})
	require.NoError(t, err)
}

// An enrollment cancelled while its mail is pending gets no mail, and its
// notification says so.
func TestCancelledEnrollmentIsNotMailed(t *testing.T) {
	setMailFaults(t, map[string]any{"mode": "error", "rate": 1})
	classID, _ := newClass(t, 10)
	student := newUser(t, "student")
	r := enroll(t, student, classID, id("key"))
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	enrollmentID := r.str("enrollment_id")
	// Wait for the attempt to have failed, not only begun: an attempt is
	// counted before the send, and a cancellation and the faults' end
	// that both come between the count and the send (a busy machine) let
	// that send through — rightly, as the enrollment was active when the
	// attempt read it; it is not the case under test.
	eventually(t, 30*time.Second, "the notifier tried and failed", func() bool {
		n := notificationOf(t, student, enrollmentID)
		return n.Attempts >= 1 && n.LastError != ""
	})
	c := call(t, student, http.MethodDelete, "/enrollments/"+enrollmentID, nil)
	require.Equal(t, http.StatusOK, c.status, string(c.raw))
	sandbox(t, stack.file.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	var last notification
	defer func() {
		if t.Failed() {
			t.Logf("the notification was last seen as %+v", last)
		}
	}()
	eventually(t, 60*time.Second, "the notification says cancelled", func() bool {
		last = notificationOf(t, student, enrollmentID)
		return last.Status == "cancelled"
	})
	require.Empty(t, mailTo(t, student.email))
}
