package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/time/rate"
)

// EventIDAttribute is the message attribute the relay sets to the event id.
const EventIDAttribute = "event_id"

// SQS is the part of *sqs.Client that Send uses.
type SQS interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// SendOptions bound a replay.
type SendOptions struct {
	// Rate is the most events per second; 0 means no limit.
	Rate float64
	// Batch is how many events one call sends, 1 to 10 (default 10).
	Batch int
	// Check, if set, runs before the first batch and every CheckEvery
	// (default 10 s); an error stops the replay before the next batch.
	Check      func(ctx context.Context) error
	CheckEvery time.Duration
	// Progress, if set, is called after every batch with the total sent.
	Progress func(sent int)
}

// ErrInterrupted is returned (wrapped, with the context's error) when the
// caller's context stops a replay.
var ErrInterrupted = errors.New("replay interrupted")

// Send delivers rows to the queue at queueURL, oldest first, as the relay
// published them: the stored envelope byte for byte as the body, with its
// original event_id, and the type and event_id message attributes. It
// returns how many were sent, in order: rows[:sent] are delivered.
//
// A cancelled ctx takes effect between batches; the batch in hand finishes.
// A row that fails to send stops the replay there. Sending a row twice is
// harmless inside the consumer's inbox retention (see CheckWindow): that is
// what makes a replay safe to repeat or to resume from the first unsent row.
func Send(ctx context.Context, c SQS, queueURL string, rows []Row, o SendOptions) (int, error) {
	if o.Batch == 0 {
		o.Batch = 10
	}
	if o.Batch < 1 || o.Batch > 10 {
		return 0, fmt.Errorf("replay: batch %d must be between 1 and 10", o.Batch)
	}
	if o.Rate < 0 {
		return 0, fmt.Errorf("replay: rate %g must not be negative", o.Rate)
	}
	if o.CheckEvery == 0 {
		o.CheckEvery = 10 * time.Second
	}
	limit := rate.Inf
	if o.Rate > 0 {
		limit = rate.Limit(o.Rate)
	}
	limiter := rate.NewLimiter(limit, o.Batch)

	sent := 0
	var lastCheck time.Time
	for sent < len(rows) {
		if err := ctx.Err(); err != nil {
			return sent, fmt.Errorf("%w after %d events: %w", ErrInterrupted, sent, err)
		}
		if o.Check != nil && (lastCheck.IsZero() || time.Since(lastCheck) >= o.CheckEvery) {
			if err := o.Check(ctx); err != nil {
				return sent, fmt.Errorf("replay stopped after %d events: %w", sent, err)
			}
			lastCheck = time.Now()
		}
		batch := rows[sent:min(sent+o.Batch, len(rows))]
		if err := limiter.WaitN(ctx, len(batch)); err != nil {
			return sent, fmt.Errorf("%w after %d events: %w", ErrInterrupted, sent, err)
		}
		n, err := sendBatch(ctx, c, queueURL, batch)
		sent += n
		if n > 0 && o.Progress != nil {
			o.Progress(sent)
		}
		if err != nil {
			return sent, fmt.Errorf("replay stopped after %d events: %w", sent, err)
		}
	}
	return sent, nil
}

// sendBatch sends one batch, ignoring the caller's cancellation, and
// returns how many leading rows were sent: a failed row and the rows after
// it count as unsent, so that sent rows are always a prefix (rows after a
// failed one that did go out are sent again on resume, harmlessly).
func sendBatch(ctx context.Context, c SQS, queueURL string, batch []Row) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, r := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(r.Payload),
			MessageAttributes: map[string]types.MessageAttributeValue{
				TypeAttribute:    {DataType: aws.String("String"), StringValue: aws.String(r.Type)},
				EventIDAttribute: {DataType: aws.String("String"), StringValue: aws.String(r.EventID)},
			},
		}
	}
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	if err != nil {
		return 0, fmt.Errorf("send to %s: %w", queueURL, err)
	}
	if len(out.Failed) == 0 {
		return len(batch), nil
	}
	first := len(batch)
	var errs []error
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		first = min(first, i)
		errs = append(errs, fmt.Errorf("event %s: %s: %s", batch[i].EventID, aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	return first, fmt.Errorf("send to %s: %w", queueURL, errors.Join(errs...))
}
