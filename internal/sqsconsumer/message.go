package sqsconsumer

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Message is one SQS message as a handler sees it.
type Message struct {
	// ID is the SQS message id (not the event id).
	ID string
	// Body is the message body; for the event queues it is the envelope JSON
	// (the subscriptions use raw message delivery).
	Body string
	// Attributes are the message attributes with a string value, such as
	// "type" and "event_id" set by the relay.
	Attributes map[string]string
	// ReceiveCount is SQS's ApproximateReceiveCount: 1 on the first
	// delivery.
	ReceiveCount int
	// SentAt is when the message entered the queue (SentTimestamp); zero if
	// unknown.
	SentAt time.Time
	// Attempt counts the deliveries of the message so far, this one
	// included: ReceiveCount plus, with Config.RetryBudget, the deliveries
	// of the copies before this one (AttrRetryAttempt).
	Attempt int
	// Deadline is when the message's retry budget ends (Config.RetryBudget);
	// zero without a budget.
	Deadline time.Time
	// LastAttempt is true when a transient failure of this delivery ends in
	// the dead-letter queue: it is the last delivery before the queue's
	// redrive policy would move the message (Config.MaxReceiveCount; code
	// retries_exhausted), or the next retry could come after the deadline
	// (Config.RetryBudget; code retry_deadline_passed). A handler that keeps
	// a business status may record that it gave up.
	LastAttempt bool
}

// Attribute returns a string message attribute, "" if absent.
func (m Message) Attribute(name string) string { return m.Attributes[name] }

// Message attribute names the relay sets (the format on the wire: package events).
const (
	AttrType    = "type"
	AttrEventID = "event_id"
)

// Message attribute names of a dead letter, all of data type String.
const (
	// AttrDLQCode is the stable snake_case cause, e.g. "unsupported_version".
	AttrDLQCode = "dlq_code"
	// AttrDLQReason is the human-readable cause (the error text).
	AttrDLQReason = "dlq_reason"
	// AttrSourceQueue is the URL of the queue the message came from (where
	// a redrive sends it back).
	AttrSourceQueue = "source_queue"
	// AttrOriginalMessageID is the message's id in the source queue.
	AttrOriginalMessageID = "original_message_id"
	// AttrReceiveCount is how often the source queue had delivered it
	// (with a retry budget, every copy's deliveries).
	AttrReceiveCount = "receive_count"
)

// Message attribute names of a retry's copy (Config.RetryBudget).
const (
	// AttrRetryDeadline is when the retry budget ends (RFC 3339, UTC).
	AttrRetryDeadline = "retry_deadline"
	// AttrRetryAttempt is how often the message was delivered before this
	// copy (data type Number).
	AttrRetryAttempt = "retry_attempt"
)

// newMessage is r as a handler sees it, with its attempt, deadline and
// whether it is the last attempt under the consumer's configuration.
func (c *Consumer) newMessage(r events.SQSMessage) Message {
	m := newMessage(r, c.cfg.MaxReceiveCount)
	if c.cfg.RetryBudget <= 0 {
		return m
	}
	now := c.cfg.Now()
	if n, err := strconv.Atoi(m.Attributes[AttrRetryAttempt]); err == nil && n > 0 {
		m.Attempt += n
	}
	if t, err := time.Parse(time.RFC3339Nano, m.Attributes[AttrRetryDeadline]); err == nil {
		m.Deadline = t.UTC()
	} else {
		// The first copy: the budget runs from when it was queued (a
		// redriven message starts a fresh one).
		m.Deadline = cmp.Or(m.SentAt, now).Add(c.cfg.RetryBudget)
	}
	if !now.Add(c.cfg.BackoffCap).Before(m.Deadline) {
		m.LastAttempt = true
	}
	return m
}

func newMessage(r events.SQSMessage, maxReceiveCount int) Message {
	m := Message{
		ID:           r.MessageId,
		Body:         r.Body,
		Attributes:   make(map[string]string, len(r.MessageAttributes)),
		ReceiveCount: receiveCount(r),
	}
	m.Attempt = m.ReceiveCount
	for name, a := range r.MessageAttributes {
		if a.StringValue != nil {
			m.Attributes[name] = *a.StringValue
		}
	}
	if ms, err := strconv.ParseInt(r.Attributes["SentTimestamp"], 10, 64); err == nil {
		m.SentAt = time.UnixMilli(ms).UTC()
	}
	m.LastAttempt = maxReceiveCount > 0 && m.ReceiveCount >= maxReceiveCount
	return m
}

// receiveCount is ApproximateReceiveCount, at least 1.
func receiveCount(r events.SQSMessage) int {
	n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// messageGroup returns the FIFO message group of r, "" on a standard queue.
func messageGroup(r events.SQSMessage) string { return r.Attributes["MessageGroupId"] }

// isFIFO reports whether a queue URL names a FIFO queue.
func isFIFO(queueURL string) bool { return strings.HasSuffix(queueURL, ".fifo") }
