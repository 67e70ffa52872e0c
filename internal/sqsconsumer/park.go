package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/internal/obs"
)

// A message whose handler cannot make progress until something else
// recovers (the notifier's mail provider, behind an open circuit breaker)
// can wait in a parking queue instead of coming back every few seconds.
// Each return of a retried message costs a receive, a delete, a send of the
// copy and an invocation, plus whatever the handler spends; a parked
// message costs one send when it is parked and its share of a batch of ten
// when it is released, however long it waits. The parking queue has no
// event source: nothing reads it until Release moves its messages back.

// ParkError is a transient failure whose message should wait in the parking
// queue; see Park.
type ParkError struct{ Err error }

func (e *ParkError) Error() string { return e.Err.Error() }
func (e *ParkError) Unwrap() error { return e.Err }

// Park marks err as transient and asks for the message to wait in the
// parking queue (Config.ParkingURL) until Release. Without a parking queue,
// or if the send to it fails, the message is retried as any transient
// failure. The retry budget still applies: a message whose deadline has
// passed is dead-lettered, not parked, and a parked message keeps its
// deadline.
func Park(err error) error {
	if err == nil {
		err = errors.New("park")
	}
	return &ParkError{Err: err}
}

// ParkingSQS is what a consumer with a parking queue needs of SQS: Release
// receives from the parking queue, sends back in batches and deletes, and
// asks how many parked messages are in flight.
type ParkingSQS interface {
	SQS
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ ParkingSQS = (*sqs.Client)(nil)

// toParking parks a message (see Park): a copy with the message's body, its
// retry attributes and its kept attributes goes to the parking queue, and
// the received message is acknowledged. If the copy cannot be sent, the
// message is retried instead.
func (c *Consumer) toParking(ctx context.Context, r events.SQSMessage, m Message, v Verdict, err error) outcome {
	if c.cfg.ParkingURL == "" {
		return c.toRetry(ctx, r, m, v, err)
	}
	attrs := retryAttributes(r, m, err)
	_, sendErr := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.cfg.ParkingURL),
		MessageBody:       aws.String(r.Body),
		MessageAttributes: attrs,
	})
	if sendErr != nil {
		c.log.WarnContext(ctx, "could not park the message; retrying it", obs.Err(sendErr))
		return c.toRetry(ctx, r, m, v, err)
	}
	c.log.DebugContext(ctx, "message parked", obs.Err(err), slog.Int("attempt", m.Attempt))
	return outcome{verdict: v, requeued: true, parked: true}
}

// retryAttributes are the attributes of a message's retry copy: its
// deadline and deliveries so far (when it has a retry budget), the tag the
// failure asks for (Tag) and the original attributes kept (see
// keptAttributes).
func retryAttributes(r events.SQSMessage, m Message, err error) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{
		AttrRetryAttempt: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(m.Attempt))},
	}
	if !m.Deadline.IsZero() {
		attrs[AttrRetryDeadline] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(m.Deadline.UTC().Format(time.RFC3339Nano))}
	}
	if t, ok := errors.AsType[*TaggedError](err); ok && !ourAttribute(t.Name) {
		attrs[t.Name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(t.Value)}
	}
	for _, name := range keptAttributes(r, len(attrs)) {
		if _, tagged := attrs[name]; tagged {
			continue
		}
		if v, ok := copyAttribute(r.MessageAttributes[name]); ok {
			attrs[name] = v
		}
	}
	return attrs
}

// Release moves every message of the parking queue back to the queue, ten
// at a time (a receive, a batch send and a batch delete for each ten), until
// the parking queue is empty or ctx ends. A message is deleted from the
// parking queue only after it was sent back, so a release cut short (an
// error, the invocation's end, a crash) loses nothing: what was received
// and not deleted is parked again after ReleaseVisibility, and a message
// sent back but not deleted comes back twice, which handlers tolerate
// (delivery is at least once). It returns how many messages it moved.
//
// "Empty" is not the first empty answer. A short poll samples some of the
// queue's servers and may answer empty while messages wait, so an empty
// short poll is asked again as a long poll, which asks them all. Messages
// received and not yet deleted (by a release running beside this one, or
// by a receive whose answer was lost) are not visible to any receive; if
// the parking queue reports some, Release waits for them with long polls
// until they are gone or visible again, or ctx ends.
func (c *Consumer) Release(ctx context.Context) (int, error) {
	if c.cfg.ParkingURL == "" {
		return 0, nil
	}
	client, ok := c.sqs.(ParkingSQS)
	if !ok {
		return 0, errors.New("sqsconsumer: the SQS client cannot receive or send in batches, needed to release parked messages")
	}
	moved := 0
	var wait int32 // seconds of long polling; a backlog answers at once without
	for ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(c.cfg.ParkingURL),
			MaxNumberOfMessages:   10,
			MessageAttributeNames: []string{"All"},
			VisibilityTimeout:     int32(ReleaseVisibility / time.Second),
			WaitTimeSeconds:       wait,
		})
		if err != nil {
			return moved, fmt.Errorf("release parked messages: receive: %w", err)
		}
		if len(out.Messages) == 0 {
			if wait == 0 {
				wait = 1
				continue
			}
			held, err := c.parkedInFlight(ctx, client)
			if err != nil {
				return moved, fmt.Errorf("release parked messages: %w", err)
			}
			if held == 0 {
				return moved, nil
			}
			wait = int32(ReleaseVisibility / time.Second)
			if deadline, ok := ctx.Deadline(); ok {
				// A long poll past ctx's end would fail the release it
				// could still finish: poll for the time that is left.
				wait = min(wait, int32(time.Until(deadline)/time.Second))
				if wait < 1 {
					return moved, fmt.Errorf("release parked messages: %d still in flight when the time ran out", held)
				}
			}
			continue
		}
		wait = 0
		n, err := c.sendBack(ctx, client, out.Messages)
		moved += n
		if err != nil {
			return moved, err
		}
	}
	return moved, ctx.Err()
}

// ReleaseVisibility is how long the messages a release received stay
// invisible to other receives: long enough to send ten back and delete
// them, short enough that a release whose receive answer was lost finds
// them again within one invocation.
const ReleaseVisibility = 10 * time.Second

// parkedInFlight is the parking queue's count of messages received and not
// deleted (ApproximateNumberOfMessagesNotVisible).
func (c *Consumer) parkedInFlight(ctx context.Context, client ParkingSQS) (int, error) {
	attr := string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(c.cfg.ParkingURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeName(attr)},
	})
	if err != nil {
		return 0, fmt.Errorf("count the parked messages in flight: %w", err)
	}
	n, err := strconv.Atoi(out.Attributes[attr])
	if err != nil {
		return 0, fmt.Errorf("count the parked messages in flight: %s is %q", attr, out.Attributes[attr])
	}
	return n, nil
}

// sendBack moves received parked messages back to the queue (a batch send,
// then a batch delete of those sent) and returns how many it moved.
func (c *Consumer) sendBack(ctx context.Context, client ParkingSQS, msgs []types.Message) (int, error) {
	send := &sqs.SendMessageBatchInput{QueueUrl: aws.String(c.cfg.QueueURL)}
	for i, pm := range msgs {
		send.Entries = append(send.Entries, types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: pm.Body, MessageAttributes: pm.MessageAttributes,
		})
	}
	sent, err := client.SendMessageBatch(ctx, send)
	if err != nil {
		return 0, fmt.Errorf("release parked messages: send back: %w", err)
	}
	del := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.cfg.ParkingURL)}
	for _, ok := range sent.Successful {
		i, _ := strconv.Atoi(aws.ToString(ok.Id))
		del.Entries = append(del.Entries, types.DeleteMessageBatchRequestEntry{Id: ok.Id, ReceiptHandle: msgs[i].ReceiptHandle})
	}
	if len(del.Entries) > 0 {
		if _, err := client.DeleteMessageBatch(ctx, del); err != nil {
			return 0, fmt.Errorf("release parked messages: delete: %w", err)
		}
	}
	if len(sent.Failed) > 0 {
		return len(del.Entries), fmt.Errorf("release parked messages: %d of %d not sent back (first: %s)", len(sent.Failed), len(msgs), aws.ToString(sent.Failed[0].Message))
	}
	return len(del.Entries), nil
}
