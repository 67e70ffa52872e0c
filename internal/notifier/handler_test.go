package notifier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestOneMailPerEventUnderDuplicateDeliveries: every event delivered twice in
// one batch and the whole batch delivered again sends exactly one mail per
// event, to the right address, under the key derived from the event id.
func TestOneMailPerEventUnderDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	students := []student{
		f.enrollStudent(t, "ada@example.com"),
		f.enrollStudent(t, "grace@example.com"),
		f.enrollStudent(t, "linus@example.com"),
	}
	var batch []lambdaevents.SQSMessage
	for _, s := range students {
		batch = append(batch, f.delivery(s.body, 1), f.delivery(s.body, 1))
	}
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, batch...)))
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, batch...)), "a replayed batch")

	msgs := f.sandbox.Messages("")
	require.Len(t, msgs, len(students))
	for _, s := range students {
		to := f.sandbox.Messages(s.email)
		require.Len(t, to, 1, s.email)
		require.Equal(t, "notify-"+s.event.EventID, to[0].IdempotencyKey)
		require.Contains(t, to[0].Text, f.class.ID())
		require.Contains(t, to[0].Text, "Sunday, 15 March 2026 at 17:00 UTC", "version 2 events say when the class starts")

		n := f.notification(t, s)
		require.Equal(t, enrollment.NotificationSent, n.Status())
		require.Equal(t, enrolledAt.Add(latency), n.SentAt())
		require.LessOrEqual(t, n.Attempts(), 2, "attempts after the mail was recorded as sent are skipped")
	}
	require.Empty(t, f.sqs.DeadLetters())
}

// TestProviderErrorsKeepPendingUntilRecovery: while the provider fails, the
// notification stays pending and the message is retried with backoff; after
// recovery it is sent once, under the same key.
func TestProviderErrorsKeepPendingUntilRecovery(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultError)

	for receive := 1; receive <= 3; receive++ {
		d := f.delivery(s.body, receive)
		require.Equal(t, []string{d.MessageId}, sqsconsumertest.FailedIDs(f.deliver(t, d)))
		delay, ok := f.sqs.Visibility(d.MessageId)
		require.True(t, ok, "the retry delay is set")
		require.GreaterOrEqual(t, delay, time.Second)
		require.LessOrEqual(t, delay, time.Duration(1<<receive)*time.Second, "exponential backoff, jittered")
		n := f.notification(t, s)
		require.Equal(t, enrollment.NotificationPending, n.Status())
		require.Equal(t, receive, n.Attempts())
	}
	require.Empty(t, f.sandbox.Messages(""))

	f.faults(t, mailsandbox.FaultNone)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 4))))
	msgs := f.sandbox.Messages("")
	require.Len(t, msgs, 1)
	require.Equal(t, "notify-"+s.event.EventID, msgs[0].IdempotencyKey)
	require.Equal(t, enrollment.NotificationSent, f.notification(t, s).Status())
	require.Empty(t, f.sqs.DeadLetters())
}

// TestLostAnswerIsUnknownThenResolvedWithoutSecondMail: the provider accepts
// and drops the connection on a reused keep-alive connection. The status is
// unknown (never failed, never sent twice); the retry with the same key
// resolves it and the provider holds one message for the event.
func TestLostAnswerIsUnknownThenResolvedWithoutSecondMail(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	warmUp := f.enrollStudent(t, "grace@example.com")
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(warmUp.body, 1))))

	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultAcceptThenDrop)
	d := f.delivery(s.body, 1)
	require.Equal(t, []string{d.MessageId}, sqsconsumertest.FailedIDs(f.deliver(t, d)))
	require.Equal(t, enrollment.NotificationUnknown, f.notification(t, s).Status())
	require.Len(t, f.sandbox.Messages(s.email), 1, "the provider has it, the notifier cannot know")
	require.Zero(t, f.sandbox.Stats().Duplicates, "the HTTP client did not resend it on its own")

	f.faults(t, mailsandbox.FaultNone)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 2))))
	require.Equal(t, enrollment.NotificationSent, f.notification(t, s).Status())
	require.Len(t, f.sandbox.Messages(s.email), 1, "one message in total")
	require.EqualValues(t, 1, f.sandbox.Stats().Duplicates, "the retry was answered from the key")
}

// TestRateLimitHonoursRetryAfter: a 429 delays the message by the provider's
// Retry-After (plus at most a second of jitter), not by the short backoff.
func TestRateLimitHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	f := setup(t, options{sandbox: mailsandbox.Options{RatePerSecond: 0.25}}) // one token, the next in 4 s (frozen clock)
	a := f.enrollStudent(t, "ada@example.com")
	b := f.enrollStudent(t, "grace@example.com")
	da, db := f.delivery(a.body, 1), f.delivery(b.body, 1)

	failed := sqsconsumertest.FailedIDs(f.deliver(t, da, db))
	require.Len(t, failed, 1, "one got the token, the other a 429")
	delay, ok := f.sqs.Visibility(failed[0])
	require.True(t, ok)
	require.GreaterOrEqual(t, delay, 4*time.Second)
	require.LessOrEqual(t, delay, 5*time.Second)

	limited := a
	if failed[0] == da.MessageId {
		require.Equal(t, enrollment.NotificationSent, f.notification(t, b).Status())
	} else {
		limited = b
		require.Equal(t, enrollment.NotificationSent, f.notification(t, a).Status())
	}
	require.Equal(t, enrollment.NotificationPending, f.notification(t, limited).Status())
	require.Len(t, f.sandbox.Messages(""), 1)
	require.Empty(t, f.sqs.DeadLetters())
}

// TestBadMessagesAreDeadLetteredWhileTheBatchGoesOn: an unknown version, a
// malformed body and an unknown type reach the DLQ with a reason; the other
// messages of the batch are sent.
func TestBadMessagesAreDeadLetteredWhileTheBatchGoesOn(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	a := f.enrollStudent(t, "ada@example.com")
	b := f.enrollStudent(t, "grace@example.com")
	v9 := strings.Replace(a.body, `"schema_version":2`, `"schema_version":9`, 1)
	require.NotEqual(t, a.body, v9)
	unknownType := strings.Replace(b.body, `"type":"enrollment.created"`, `"type":"enrollment.teleported"`, 1)
	require.NotEqual(t, b.body, unknownType)

	batch := []lambdaevents.SQSMessage{
		f.delivery(a.body, 1), f.delivery(v9, 1), f.delivery(`{"event_id":`, 1), f.delivery(unknownType, 3), f.delivery(b.body, 1),
	}
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, batch...)))
	require.Len(t, f.sandbox.Messages(""), 2, "the good messages of the batch were sent")

	dead := map[string]sqsconsumertest.DeadLetter{}
	for _, dl := range f.sqs.DeadLetters() {
		dead[dl.Attributes["dlq_code"]] = dl
	}
	require.Len(t, dead, 3)
	require.Equal(t, v9, dead["unsupported_version"].Body)
	require.Contains(t, dead["unsupported_version"].Attributes["dlq_reason"], "enrollment.created version 9")
	require.Equal(t, batch[1].MessageId, dead["unsupported_version"].Attributes["original_message_id"])
	require.Equal(t, `{"event_id":`, dead["malformed_event"].Body)
	require.Equal(t, "3", dead["unknown_event_type"].Attributes["receive_count"])
	for _, dl := range dead {
		require.Equal(t, "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications-dlq", dl.QueueURL)
		require.Equal(t, "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications", dl.Attributes["source_queue"])
	}
}

func TestNoAddressFailsPermanently(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	s := f.enrollStudent(t, "") // never set a profile
	d := f.delivery(s.body, 1)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, d)), "not retried")

	require.Equal(t, enrollment.NotificationFailed, f.notification(t, s).Status())
	dead := f.sqs.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "no_address", dead[0].Attributes["dlq_code"])
	require.Contains(t, dead[0].Attributes["dlq_reason"], "no e-mail address")
	require.Equal(t, s.event.EventID, dead[0].Attributes["event_id"])
	require.Empty(t, f.sandbox.Messages(""))
}

// TestAddressPolicy: the mail goes to the current profile address or to the
// address captured at enrollment, as configured.
func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		policy profile.AddressPolicy
		want   string
	}{
		{profile.PolicyCurrent, "ada.new@example.com"},
		{profile.PolicyAtEnrollment, "ada@example.com"},
	} {
		t.Run(string(tt.policy), func(t *testing.T) {
			t.Parallel()
			f := setup(t, options{policy: tt.policy})
			s := f.enrollStudent(t, "ada@example.com")
			p, err := profile.New(s.id, "ada.new@example.com", "Ada", enrolledAt)
			require.NoError(t, err)
			require.NoError(t, f.store.Profiles.Put(context.Background(), p)) // changed after enrolling

			require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 1))))
			msgs := f.sandbox.Messages("")
			require.Len(t, msgs, 1)
			require.Equal(t, tt.want, msgs[0].To)
		})
	}
}

// TestAddressChangeAfterLostAnswer: the answer to the first attempt was lost
// and the student changed the address before the retry. The provider already
// holds the event's message (to the old address) and refuses the key with
// another payload (409): a contract conflict. The notifier sends no second
// mail, never records it as sent (it stays unknown: the provider may have
// sent the old payload), dead-letters it with contract_conflict and counts
// it.
func TestAddressChangeAfterLostAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultAcceptThenDrop)
	require.Len(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 1))), 1)
	require.Equal(t, enrollment.NotificationUnknown, f.notification(t, s).Status())

	p, err := profile.New(s.id, "ada.new@example.com", "Ada", enrolledAt)
	require.NoError(t, err)
	require.NoError(t, f.store.Profiles.Put(context.Background(), p))
	f.faults(t, mailsandbox.FaultNone)

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 2))))
	n := f.notification(t, s)
	require.Equal(t, enrollment.NotificationUnknown, n.Status())
	require.Contains(t, n.LastError(), "contract conflict")
	msgs := f.sandbox.Messages("")
	require.Len(t, msgs, 1)
	require.Equal(t, "ada@example.com", msgs[0].To)
	require.EqualValues(t, 1, f.sandbox.Stats().Conflicts)
	dead := f.sqs.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "contract_conflict", dead[0].Attributes["dlq_code"])
	require.Equal(t, s.event.EventID, dead[0].Attributes["event_id"])
	require.Contains(t, f.metrics.String(), `"NotificationContractConflicts":1`)
}

// TestLastAttemptGivesUp: when the last allowed delivery fails transiently,
// a pending notification becomes failed and the message reaches the DLQ with
// a reason; an unknown one stays unknown (the provider may have it).
func TestLastAttemptGivesUp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fault mailsandbox.FaultMode
		want  enrollment.NotificationStatus
	}{
		{mailsandbox.FaultError, enrollment.NotificationFailed},
		{mailsandbox.FaultAcceptThenDrop, enrollment.NotificationUnknown},
	} {
		t.Run(string(tt.fault), func(t *testing.T) {
			t.Parallel()
			f := setup(t, options{})
			s := f.enrollStudent(t, "ada@example.com")
			f.faults(t, tt.fault)
			require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, maxReceiveCount))))
			require.Equal(t, tt.want, f.notification(t, s).Status())
			dead := f.sqs.DeadLetters()
			require.Len(t, dead, 1)
			require.Equal(t, "retries_exhausted", dead[0].Attributes["dlq_code"])
			require.Equal(t, fmt.Sprint(maxReceiveCount), dead[0].Attributes["receive_count"])
		})
	}
}

func TestOtherEventTypesAreIgnored(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	cancelled, err := events.New(events.NewID(), enrolledAt, events.EnrollmentCancelled{EnrollmentID: "e-1", ClassID: "c-1", StudentID: "s-1"})
	require.NoError(t, err)
	body, err := jsonOf(cancelled)
	require.NoError(t, err)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(body, 1))))
	require.Empty(t, f.sandbox.Messages(""))
	require.Empty(t, f.sqs.DeadLetters())
}

// TestObservability: the latency metric is now − occurred_at, log lines
// carry the ids, and no log line carries an e-mail address.
func TestObservability(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	s := f.enrollStudent(t, "ada.lovelace@example.com")
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 1))))

	var latencies []any
	for _, line := range f.metrics.lines(t) {
		if v, ok := line[MetricNotificationLatency]; ok {
			latencies = append(latencies, v)
			require.Equal(t, FunctionName, line["Function"])
			require.EqualValues(t, 1, line[MetricNotificationsSent])
		}
	}
	require.Len(t, latencies, 1)
	require.Contains(t, []any{float64(1500), []any{float64(1500)}}, latencies[0], "milliseconds from occurred_at")

	var sent map[string]any
	for _, line := range f.logs.lines(t) {
		if line["msg"] == "notification sent" {
			sent = line
		}
	}
	require.NotNil(t, sent)
	require.Equal(t, s.event.EventID, sent["event_id"])
	require.Equal(t, s.enrollmentID, sent["enrollment_id"])
	require.Equal(t, f.class.ID(), sent["class_id"])
	require.Equal(t, "a***@example.com", sent["to"])
	require.NotEmpty(t, sent["mail_message_id"], "the provider's id, beside the SQS message's message_id")
	require.NotEqual(t, sent["mail_message_id"], sent["message_id"])
	require.NotContains(t, f.logs.String(), s.email)
}

// TestABatchWritesOneMetricsLine: a batch's latencies and its mails still
// owed go out as one metrics line, not a line a message (each line is
// CloudWatch Logs ingestion, billed per GB).
func TestABatchWritesOneMetricsLine(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	var batch []lambdaevents.SQSMessage
	for i := range 7 {
		batch = append(batch, f.delivery(f.enrollStudent(t, fmt.Sprintf("s%d@example.com", i)).body, 1))
	}
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, batch...)))
	lines := f.metricLines(t, MetricNotificationLatency)
	require.Len(t, lines, 1, "one line for the batch")
	require.Len(t, lines[0][MetricNotificationLatency], 7, "a latency a mail")
	require.EqualValues(t, 7, lines[0][MetricNotificationsSent])

	// The provider fails: each mail of the next batch will be retried, and
	// how long each is owed goes out in one line too.
	f.faults(t, mailsandbox.FaultError)
	batch = batch[:0]
	for i := range 3 {
		batch = append(batch, f.delivery(f.enrollStudent(t, fmt.Sprintf("o%d@example.com", i)).body, 1))
	}
	f.deliver(t, batch...)
	owed := f.metricLines(t, MetricPendingAge)
	require.Len(t, owed, 1, "one line for the batch")
	require.Len(t, owed[0][MetricPendingAge], 3, "an age a mail owed")
}

// metricLines are the metrics lines written so far that carry metric.
func (f *fixture) metricLines(t *testing.T, metric string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range f.metrics.lines(t) {
		if _, ok := line[metric]; ok {
			out = append(out, line)
		}
	}
	return out
}

// TestABatchReadsItsAddressesAtOnce: the profiles of a batch are read in one
// request; a student the batch read did not find is read again on its own
// and, still without a profile, is recorded as failed.
func TestABatchReadsItsAddressesAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	var batch []lambdaevents.SQSMessage
	var students []student
	for i := range 5 {
		s := f.enrollStudent(t, fmt.Sprintf("s%d@example.com", i))
		students = append(students, s)
		batch = append(batch, f.delivery(s.body, 1))
	}
	nobody := f.enrollStudent(t, "")
	batch = append(batch, f.delivery(nobody.body, 1))

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, batch...)))
	require.EqualValues(t, 2, f.profileReads.Load(), "one batch read, one read for the student it did not find")
	for _, s := range students {
		require.Len(t, f.sandbox.Messages(s.email), 1, s.email)
		require.Equal(t, enrollment.NotificationSent, f.notification(t, s).Status())
	}
	require.Equal(t, enrollment.NotificationFailed, f.notification(t, nobody).Status())
	dl := f.sqs.DeadLetters()
	require.Len(t, dl, 1)
	require.Equal(t, codeNoAddress, dl[0].Attributes["dlq_code"])

	// Under the at_enrollment policy no profile is read at all.
	g := setup(t, options{policy: profile.PolicyAtEnrollment})
	var captured []lambdaevents.SQSMessage
	for i := range 3 {
		captured = append(captured, g.delivery(g.enrollStudent(t, fmt.Sprintf("c%d@example.com", i)).body, 1))
	}
	reads := g.profileReads.Load() // the enrollments read the profiles they captured
	require.Empty(t, sqsconsumertest.FailedIDs(g.deliver(t, captured...)))
	require.Equal(t, reads, g.profileReads.Load())
	require.Len(t, g.sandbox.Messages(""), 3)
}

// TestRetryBudgetKeepsMailPendingThroughALongOutage: with a retry budget in
// time, a provider that fails far longer than the old eight receives leaves
// the mail pending, with its attempts and last error, each retry a delayed
// copy of the message and nothing in the dead-letter queue; once the
// provider answers, the mail goes out once, under the event's key.
func TestRetryBudgetKeepsMailPendingThroughALongOutage(t *testing.T) {
	t.Parallel()
	f := setup(t, options{budget: 24 * time.Hour})
	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultError)

	d := f.delivery(s.body, 1)
	const attempts = 3 * maxReceiveCount
	for attempt := 1; attempt <= attempts; attempt++ {
		require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, d)), "the received message is acknowledged: its copy carries the retry")
		copies := f.sqs.Copies()
		require.Len(t, copies, attempt)
		c := copies[attempt-1]
		require.Equal(t, s.body, c.Body)
		require.Equal(t, fmt.Sprint(attempt), c.Attributes["retry_attempt"])
		require.NotEmpty(t, c.Attributes["retry_deadline"])
		require.GreaterOrEqual(t, c.Delay, time.Second)
		require.LessOrEqual(t, c.Delay, 30*time.Second, "the backoff is capped")
		n := f.notification(t, s)
		require.Equal(t, enrollment.NotificationPending, n.Status())
		require.Equal(t, attempt, n.Attempts())
		require.Contains(t, n.LastError(), "503 provider_unavailable")
		d = f.redelivery(c)
	}
	require.Empty(t, f.sqs.DeadLetters())
	require.Empty(t, f.sandbox.Messages(""))
	require.Contains(t, f.metrics.String(), `"PendingNotificationAge":1.5`, "how long the mail is owed, for the alarm")

	f.faults(t, mailsandbox.FaultNone)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, d)))
	msgs := f.sandbox.Messages("")
	require.Len(t, msgs, 1)
	require.Equal(t, "notify-"+s.event.EventID, msgs[0].IdempotencyKey)
	n := f.notification(t, s)
	require.Equal(t, enrollment.NotificationSent, n.Status())
	require.Empty(t, n.LastError(), "a sent mail has no last error")
	require.Len(t, f.sqs.Copies(), attempts, "no retry after the send")
	require.Empty(t, f.sqs.DeadLetters())
}

// TestDeadlinePassedFailsTheMail: a transient failure after the retry
// budget's deadline fails the notification and dead-letters the message with
// retry_deadline_passed and the last error.
func TestDeadlinePassedFailsTheMail(t *testing.T) {
	t.Parallel()
	f := setup(t, options{budget: 24 * time.Hour})
	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultError)
	d := f.delivery(s.body, 1)
	deadline := enrolledAt.Add(latency + 10*time.Second).Format(time.RFC3339Nano) // before the next retry could come
	d = f.redelivery(sqsconsumertest.Copy{Body: d.Body, Attributes: map[string]string{
		"type": "enrollment.created", "event_id": s.event.EventID, "retry_deadline": deadline, "retry_attempt": "40",
	}})
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, d)))
	n := f.notification(t, s)
	require.Equal(t, enrollment.NotificationFailed, n.Status())
	require.Contains(t, n.LastError(), "503 provider_unavailable")
	dead := f.sqs.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "retry_deadline_passed", dead[0].Attributes["dlq_code"])
	require.Contains(t, dead[0].Attributes["dlq_reason"], "503 provider_unavailable")
	require.Equal(t, "41", dead[0].Attributes["receive_count"])
	require.NotContains(t, dead[0].Attributes, "retry_deadline", "a redrive starts a fresh budget")
	require.Empty(t, f.sqs.Copies())
}

// TestCancelledEnrollmentIsNotMailed: an enrollment cancelled while its mail
// was pending gets no mail; its notification says cancelled, and later
// deliveries change nothing.
func TestCancelledEnrollmentIsNotMailed(t *testing.T) {
	t.Parallel()
	f := setup(t, options{budget: 24 * time.Hour})
	s := f.enrollStudent(t, "ada@example.com")
	f.faults(t, mailsandbox.FaultError)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(s.body, 1))))
	require.Equal(t, enrollment.NotificationPending, f.notification(t, s).Status())

	_, err := f.enroll.Cancel(context.Background(), s.enrollmentID, s.id)
	require.NoError(t, err)
	f.faults(t, mailsandbox.FaultNone)
	for range 2 {
		require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.redelivery(f.sqs.Copies()[0]))))
	}
	require.Empty(t, f.sandbox.Messages(""), "no mail for a cancelled seat")
	n := f.notification(t, s)
	require.Equal(t, enrollment.NotificationCancelled, n.Status())
	require.Equal(t, 2, n.Attempts(), "counted once before the cancellation; a cancelled notification counts no more")
	require.Len(t, f.sqs.Copies(), 1, "not retried")
	require.Empty(t, f.sqs.DeadLetters())
}

// TestRefusedMailIsParkedWithoutAWrite: with a parking queue, the mail
// whose failure opens the breaker comes back when the next probe is due,
// and the mail the open breaker refuses goes to the parking queue at once,
// without a write: its attempts stay at what reached the provider (none).
func TestRefusedMailIsParkedWithoutAWrite(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(enrolledAt)
	f := setup(t, options{budget: time.Hour, breaker: &Breaker{Threshold: 1, ProbeInterval: 5 * time.Second, Now: clk.Now}})
	a, b := f.enrollStudent(t, "ada@example.com"), f.enrollStudent(t, "grace@example.com")
	f.faults(t, mailsandbox.FaultError)

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(a.body, 1))))
	require.Len(t, f.sqs.Copies(), 1)
	opener := f.sqs.Copies()[0]
	require.NotEqual(t, parkingURL, opener.QueueURL, "the mail that opened the breaker stays in the queue")
	require.GreaterOrEqual(t, opener.Delay, 5*time.Second, "back when the next probe is due")
	require.LessOrEqual(t, opener.Delay, 6*time.Second)
	require.Equal(t, 1, f.notification(t, a).Attempts())

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(b.body, 1))))
	require.Len(t, f.sqs.Copies(), 2)
	parked := f.sqs.Copies()[1]
	require.Equal(t, parkingURL, parked.QueueURL)
	require.Zero(t, parked.Delay)
	require.Equal(t, b.event.EventID, parked.Attributes["event_id"])
	require.NotEmpty(t, parked.Attributes["retry_deadline"], "a parked mail keeps its deadline")
	n := f.notification(t, b)
	require.Equal(t, enrollment.NotificationPending, n.Status())
	require.Zero(t, n.Attempts(), "refused before any call: not an attempt, and no write")
	require.Empty(t, f.sqs.DeadLetters())
}

// queued receives what waits in the notifications queue (retries' copies,
// released mail) and returns it by event id, as the queue would deliver
// each, beside the copy that was sent.
func (f *fixture) queued(t *testing.T) map[string]queuedMail {
	t.Helper()
	waiting := f.sqs.Waiting(queueURL)
	out := map[string]queuedMail{}
	for _, c := range waiting {
		out[c.Attributes["event_id"]] = queuedMail{copy: c, record: f.redelivery(c)}
	}
	for received := 0; received < len(waiting); {
		got, err := f.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10})
		require.NoError(t, err)
		require.NotEmpty(t, got.Messages)
		received += len(got.Messages)
	}
	return out
}

// twoInstances sets up two instances of the notifier with a parking queue,
// each with its own breaker (threshold 1, a probe every 5 s) on clk.
func twoInstances(t *testing.T) (f *fixture, clk *clock.Fake, a, b *Handler) {
	t.Helper()
	clk = clock.NewFake(enrolledAt)
	breaker := func() *Breaker { return &Breaker{Threshold: 1, ProbeInterval: 5 * time.Second, Now: clk.Now} }
	f = setup(t, options{budget: time.Hour, breaker: breaker()})
	return f, clk, f.handler, f.instance(t, breaker())
}

type queuedMail struct {
	copy   sqsconsumertest.Copy
	record lambdaevents.SQSMessage
}

// TestParkedMailIsReleasedWhicheverInstanceItsProberReaches: two instances,
// each with its own breaker. Each parks what its open breaker refuses; the
// mail whose failure opened a breaker probes for it (AttrProber), and
// comes back to whichever instance the queue hands it. Parked mail is
// released when a breaker closes, and also when a prober is sent on an
// instance whose breaker was never open or has released already: an
// instance whose breaker is still open may have parked mail after the last
// release, and no other mail may come to wake it.
func TestParkedMailIsReleasedWhicheverInstanceItsProberReaches(t *testing.T) {
	t.Parallel()
	f, clk, instanceA, instanceB := twoInstances(t)
	a, b, c := f.enrollStudent(t, "ada@example.com"), f.enrollStudent(t, "grace@example.com"), f.enrollStudent(t, "linus@example.com")
	f.faults(t, mailsandbox.FaultError)

	// The outage: a opens A's breaker; a second later b opens B's; c comes
	// to A, whose next probe is four seconds away, and is parked.
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, f.delivery(a.body, 1))))
	clk.Advance(time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, f.delivery(b.body, 1))))
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, f.delivery(c.body, 1))))
	require.Len(t, f.sqs.Waiting(parkingURL), 1, "c parked")
	require.Empty(t, f.sqs.Waiting(parkingURL)[0].Attributes[AttrProber], "a parked mail does not probe")
	probers := f.queued(t)
	require.Len(t, probers, 2)
	for _, s := range []student{a, b} {
		p := probers[s.event.EventID]
		require.Equal(t, "true", p.copy.Attributes[AttrProber], "the mail that opened a breaker probes for it")
		require.GreaterOrEqual(t, p.copy.Delay, 5*time.Second, "back when its breaker's next probe is due")
		require.LessOrEqual(t, p.copy.Delay, 6*time.Second, "with at most a second of jitter")
	}

	// The provider answers again. a's probe reaches A when it is due: A
	// closes and releases c, which the queue hands to B, whose breaker is
	// still open with its probe a second away: c is parked again.
	f.faults(t, mailsandbox.FaultNone)
	clk.Advance(4 * time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, probers[a.event.EventID].record)))
	require.Empty(t, f.sqs.Waiting(parkingURL), "A's breaker closed: the parked mail released")
	released := f.queued(t)
	require.Contains(t, released, c.event.EventID)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, released[c.event.EventID].record)))
	require.Len(t, f.sqs.Waiting(parkingURL), 1, "B's open breaker parked c again")

	// B's prober comes back to A, whose breaker closed a second ago. Sent,
	// it releases c: nothing else would, as no other mail comes.
	clk.Advance(time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, probers[b.event.EventID].record)))
	require.Empty(t, f.sqs.Waiting(parkingURL), "a prober sent anywhere releases the parked mail")
	released = f.queued(t)
	require.Contains(t, released, c.event.EventID)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, released[c.event.EventID].record)))

	for _, want := range []struct {
		s        student
		attempts int
	}{{a, 2}, {b, 2}, {c, 1}} {
		s, attempts := want.s, want.attempts
		require.Len(t, f.sandbox.Messages(s.email), 1, "%s: exactly once", s.email)
		n := f.notification(t, s)
		require.Equal(t, enrollment.NotificationSent, n.Status(), s.email)
		require.Equal(t, attempts, n.Attempts(), "%s: attempts are calls to the provider", s.email)
	}
	require.Empty(t, f.sqs.Waiting(parkingURL))
	require.Empty(t, f.sqs.DeadLetters())
}

// TestAProberParkedElsewhereIsReleasedByTheParkingInstancesProber: a
// prober that reaches an instance whose open breaker is not due for a
// probe is parked like any mail (so the probers do not multiply while the
// provider is down); so is a message SQS delivered again. The parking
// breaker's own prober comes back after them, and once the provider
// answers its sending releases them, on whichever instance.
func TestAProberParkedElsewhereIsReleasedByTheParkingInstancesProber(t *testing.T) {
	t.Parallel()
	f, clk, instanceA, instanceB := twoInstances(t)
	a, b, c := f.enrollStudent(t, "ada@example.com"), f.enrollStudent(t, "grace@example.com"), f.enrollStudent(t, "linus@example.com")
	f.faults(t, mailsandbox.FaultError)

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, f.delivery(a.body, 1))))
	clk.Advance(3 * time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, f.delivery(b.body, 1))))
	probers := f.queued(t)
	clk.Advance(2 * time.Second)
	// a's probe is due at A; it reaches B, whose probe is 3 s away.
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, probers[a.event.EventID].record)))
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceB, f.delivery(c.body, 2))))
	require.Len(t, f.sqs.Waiting(parkingURL), 2, "a and c parked")
	require.Empty(t, f.sqs.Waiting(queueURL), "only b probes now")
	require.Equal(t, 1, f.notification(t, a).Attempts(), "a refusal is not an attempt")
	require.Zero(t, f.notification(t, c).Attempts())

	// The provider answers; B's prober comes back when B's probe is due,
	// to A, and is sent there: A releases what B parked.
	f.faults(t, mailsandbox.FaultNone)
	clk.Advance(3 * time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, probers[b.event.EventID].record)))
	require.Empty(t, f.sqs.Waiting(parkingURL), "released")
	released := f.queued(t)
	require.Len(t, released, 2)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliverTo(t, instanceA, released[a.event.EventID].record, released[c.event.EventID].record)))
	for _, s := range []student{a, b, c} {
		require.Len(t, f.sandbox.Messages(s.email), 1, "%s: exactly once", s.email)
		require.Equal(t, enrollment.NotificationSent, f.notification(t, s).Status(), s.email)
	}
	require.Empty(t, f.sqs.Waiting(parkingURL))
	require.Empty(t, f.sqs.DeadLetters())
}

// TestMailRefusedDuringAProbeThatCallsNobodyStillProbes: the first mail
// the open breaker refuses while its probe is in flight is not parked but
// comes back as a prober, the probe's stand-in. The probe in flight may end
// without calling the provider (its mail was cancelled or sent already, or
// a write failed before the send): it then decides nothing, makes no prober
// and releases nothing, and were every mail beside it parked, they would
// wait for a release no one sends. One stand-in is enough: the next mail
// refused during the same probe is parked, and the stand-in's send
// releases it.
func TestMailRefusedDuringAProbeThatCallsNobodyStillProbes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(enrolledAt)
	breaker := &Breaker{Threshold: 1, ProbeInterval: 5 * time.Second, Now: clk.Now}
	f := setup(t, options{budget: time.Hour, breaker: breaker})
	a, b, c := f.enrollStudent(t, "ada@example.com"), f.enrollStudent(t, "grace@example.com"), f.enrollStudent(t, "linus@example.com")
	f.faults(t, mailsandbox.FaultError)

	// a opens the breaker; its probe comes due.
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(a.body, 1))))
	opener := f.queued(t)[a.event.EventID]
	clk.Advance(5 * time.Second)

	// Another message of the batch holds the probe's pass while b comes:
	// b is refused, and probes next instead of being parked.
	probe, err := breaker.Admit()
	require.NoError(t, err, "the probe is due")
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(b.body, 1))))
	require.Empty(t, f.sqs.Waiting(parkingURL), "refused while the probe was in flight: not parked")
	waiting := f.queued(t)
	require.Contains(t, waiting, b.event.EventID)
	require.Equal(t, "true", waiting[b.event.EventID].copy.Attributes[AttrProber])
	require.GreaterOrEqual(t, waiting[b.event.EventID].copy.Delay, 5*time.Second, "back when the probe after the one in flight is due")
	require.Zero(t, f.notification(t, b).Attempts(), "a refusal is not an attempt")
	// c, refused during the same probe, is parked: b stands in for it.
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, f.delivery(c.body, 1))))
	require.Len(t, f.sqs.Waiting(parkingURL), 1, "the probe has its stand-in: c parked")
	require.NotContains(t, f.queued(t), c.event.EventID)
	require.Zero(t, f.notification(t, c).Attempts())

	// The probe in flight calls nobody (its mail needed no send): the
	// breaker stays open, undecided. The provider answers again, and b,
	// when it comes back, is the probe: sent.
	probe.Release()
	require.True(t, breaker.Stats().Open)
	f.faults(t, mailsandbox.FaultNone)
	clk.Advance(5 * time.Second)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, waiting[b.event.EventID].record)))
	require.Len(t, f.sandbox.Messages(b.email), 1, "exactly once")
	require.Equal(t, enrollment.NotificationSent, f.notification(t, b).Status())
	require.False(t, breaker.Stats().Open, "b's probe closed the breaker")
	require.Empty(t, f.sqs.Waiting(parkingURL), "b's send released c")
	released := f.queued(t)
	require.Contains(t, released, c.event.EventID)
	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, released[c.event.EventID].record)))
	require.Len(t, f.sandbox.Messages(c.email), 1, "exactly once")

	require.Empty(t, sqsconsumertest.FailedIDs(f.deliver(t, opener.record)))
	require.Len(t, f.sandbox.Messages(a.email), 1)
	require.Empty(t, f.sqs.Waiting(parkingURL))
	require.Empty(t, f.sqs.DeadLetters())
}
