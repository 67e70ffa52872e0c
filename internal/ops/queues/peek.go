package queues

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// PeekAPI is the part of *sqs.Client that Peek uses.
type PeekAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ PeekAPI = (*sqs.Client)(nil)

// Message is a message as a peek saw it.
type Message struct {
	ID   string `json:"message_id"`
	Body string `json:"body"`
	// SentAt is when SQS accepted the message (SentTimestamp). A dead letter
	// moved by the redrive policy keeps its original time; one sent by a
	// consumer has the time it was dead-lettered.
	SentAt time.Time `json:"sent_at"`
	// ReceiveCount is ApproximateReceiveCount including the peek's own
	// receive.
	ReceiveCount int `json:"receive_count"`
	// Attributes are the string message attributes.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Age is how long the message has been waiting at now.
func (m Message) Age(now time.Time) time.Duration { return max(now.Sub(m.SentAt), 0) }

// PeekOptions bound a peek.
type PeekOptions struct {
	// Limit is the most messages the peek looks at (default 100).
	Limit int
	// Hold is the visibility timeout of the peek's receives: how long the
	// messages would stay hidden if restoring them failed (default 30 s).
	// They are restored as soon as the peek has looked.
	Hold time.Duration
}

const (
	defaultPeekLimit = 100
	defaultPeekHold  = 30 * time.Second
	// restoreTimeout bounds the restore, which runs even when the caller's
	// context is cancelled: leaving messages hidden is the one thing a peek
	// must not do.
	restoreTimeout = 15 * time.Second
	maxBatch       = 10 // SQS's limit per receive and per batch call
)

func (o PeekOptions) withDefaults() PeekOptions {
	if o.Limit <= 0 {
		o.Limit = defaultPeekLimit
	}
	if o.Hold <= 0 {
		o.Hold = defaultPeekHold
	}
	return o
}

// Peeked is what a peek saw.
type Peeked struct {
	// Messages are the messages seen, oldest first.
	Messages []Message
	// Complete is true when the queue had no more messages to give before
	// the limit was reached. On SQS a short poll samples a subset of the
	// servers, so even a complete peek of a large queue may miss some.
	Complete bool
}

// Peek looks at up to Limit visible messages of a queue without consuming
// them: it receives them with a visibility timeout of Hold, keeping each
// hidden only until the peek has looked, and then makes every one visible
// again at once (ChangeMessageVisibility to 0), also when ctx is cancelled
// midway. It never deletes a message.
//
// A peek is not free, which is why callers make it opt-in on AWS:
//
//   - Every receive counts: ApproximateReceiveCount grows by one for each
//     message looked at, so a message one failure away from its queue's
//     maxReceiveCount is moved to the dead-letter queue at its next receive
//     instead of being retried once more. On a dead-letter queue (which has
//     no redrive policy) this costs nothing.
//   - For the few milliseconds of the peek, the messages are hidden from the
//     consumers.
//   - Messages already in flight (leased by a consumer) and delayed messages
//     cannot be received, so the peek does not see them.
//
// Receiving with a visibility timeout of 0 instead would avoid the second
// point but not the first, and would return the same messages again and
// again; on kumo a visibility timeout of 0 even means "the queue's default".
// FIFO queues are refused: a receive locks a message group, and an emulator
// may not restore the group's order.
func Peek(ctx context.Context, c PeekAPI, url string, o PeekOptions) (p Peeked, err error) {
	if isFIFO(url) {
		return Peeked{}, fmt.Errorf("peek %s: FIFO queues are not peeked (a receive locks the message group)", url)
	}
	o = o.withDefaults()
	var handles []string
	defer func() {
		if rerr := restore(ctx, c, url, handles); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()

	seen := map[string]bool{}
	for len(p.Messages) < o.Limit {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(url),
			MaxNumberOfMessages: int32(min(maxBatch, o.Limit-len(p.Messages))),
			VisibilityTimeout:   int32(max(o.Hold/time.Second, 1)),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameSentTimestamp,
				types.MessageSystemAttributeNameApproximateReceiveCount,
			},
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return Peeked{}, fmt.Errorf("peek %s: %w", url, err)
		}
		if len(out.Messages) == 0 {
			p.Complete = true
			break
		}
		for _, m := range out.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			msg, err := fromSQS(m)
			if err != nil {
				return Peeked{}, fmt.Errorf("peek %s: %w", url, err)
			}
			p.Messages = append(p.Messages, msg)
		}
	}
	slices.SortStableFunc(p.Messages, func(a, b Message) int { return a.SentAt.Compare(b.SentAt) })
	return p, nil
}

// restore makes the peeked messages visible again.
func restore(ctx context.Context, c PeekAPI, url string, handles []string) error {
	if len(handles) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	var errs []error
	for start := 0; start < len(handles); start += maxBatch {
		batch := handles[start:min(start+maxBatch, len(handles))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))
		for i, h := range batch {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: 0,
			}
		}
		out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restore visibility of peeked messages in %s (they reappear when their hold ends): %w", url, err)
	}
	return nil
}

func fromSQS(m types.Message) (Message, error) {
	msg := Message{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body)}
	if v := m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Message{}, fmt.Errorf("message %s: SentTimestamp %q: %w", msg.ID, v, err)
		}
		msg.SentAt = time.UnixMilli(ms).UTC()
	}
	if v := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Message{}, fmt.Errorf("message %s: ApproximateReceiveCount %q: %w", msg.ID, v, err)
		}
		msg.ReceiveCount = n
	}
	if len(m.MessageAttributes) > 0 {
		msg.Attributes = make(map[string]string, len(m.MessageAttributes))
		for name, a := range m.MessageAttributes {
			if a.StringValue != nil {
				msg.Attributes[name] = *a.StringValue
			}
		}
	}
	return msg, nil
}

func isFIFO(url string) bool { return len(url) > 5 && url[len(url)-5:] == ".fifo" }
