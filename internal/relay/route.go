package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
)

// ErrNoRoute: the routing table has no publisher for the row's kind (or the
// type is unknown to this build). It is permanent: retrying the same row
// cannot succeed until a route is deployed.
var ErrNoRoute = errors.New("no route")

// Message is one outbox row as a publisher sends it.
type Message struct {
	EventID     string
	Type        events.Type
	AggregateID string
	// Body is the envelope JSON, exactly as stored in the outbox.
	Body []byte
}

// MessageOf returns the message for an outbox row.
func MessageOf(r outbox.Row) Message {
	return Message{EventID: r.EventID, Type: r.Type, AggregateID: r.AggregateID, Body: r.Payload}
}

// Publisher hands messages to one destination (a topic, a queue, a state
// machine).
type Publisher interface {
	// Publish sends msgs in order and returns how many of them, from the
	// start, are known to be accepted by the destination. If that is less
	// than len(msgs), err says why msgs[n] was not; messages after it may or
	// may not have been sent (they will be sent again, with the same
	// event_id). Publishing the same message twice must be harmless to the
	// destination's consumers, which deduplicate by event_id.
	Publish(ctx context.Context, msgs []Message) (n int, err error)
}

// Routes is the routing table: the publisher that carries each kind.
type Routes map[events.Kind]Publisher

// route returns the kind and publisher for t, or an error wrapping
// ErrNoRoute.
func (r Routes) route(t events.Type) (events.Kind, Publisher, error) {
	kind, ok := events.KindOf(t)
	if !ok {
		return "", nil, fmt.Errorf("%w for type %q: %w", ErrNoRoute, t, events.ErrUnknownType)
	}
	p := r[kind]
	if p == nil {
		return kind, nil, fmt.Errorf("%w for kind %q (type %s)", ErrNoRoute, kind, t)
	}
	return kind, p, nil
}

// SQSAPI is the part of *sqs.Client the job sender uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// JobQueues says which queue (its URL) carries each job type: the queue of
// the job's work class.
type JobQueues map[events.Type]string

// JobSender is the publisher of job rows (events.KindJob, such as
// export.requested): one SQS message per row to the queue of its type, the
// envelope as the body and the String attributes type and event_id, as the
// events topic delivers events. A row sent again (a retried stream batch,
// the sweeper) is the same message again; the job's worker recognises it by
// the job's own id. It is safe for concurrent use.
type JobSender struct {
	sqs    SQSAPI
	queues JobQueues
}

var _ Publisher = (*JobSender)(nil)

// NewJobSender returns a sender for the given job types.
func NewJobSender(client SQSAPI, queues JobQueues) (*JobSender, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("job sender: nil SQS client"))
	}
	if len(queues) == 0 {
		errs = append(errs, errors.New("job sender: no job queues"))
	}
	for t, url := range queues {
		if kind, ok := events.KindOf(t); !ok || kind != events.KindJob {
			errs = append(errs, fmt.Errorf("job sender: %q is not a job type", t))
		}
		if url == "" {
			errs = append(errs, fmt.Errorf("job sender: no queue URL for %s", t))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &JobSender{sqs: client, queues: maps.Clone(queues)}, nil
}

// Publish sends one message per row, in order, and stops at the first that
// fails; a type without a queue fails with ErrNoRoute. Either way the row
// stays pending.
func (j *JobSender) Publish(ctx context.Context, msgs []Message) (int, error) {
	for i, m := range msgs {
		url := j.queues[m.Type]
		if url == "" {
			return i, fmt.Errorf("send job %s: %w for job type %s", m.EventID, ErrNoRoute, m.Type)
		}
		_, err := j.sqs.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:    aws.String(url),
			MessageBody: aws.String(string(m.Body)),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				AttrType:    {DataType: aws.String("String"), StringValue: aws.String(string(m.Type))},
				AttrEventID: {DataType: aws.String("String"), StringValue: aws.String(m.EventID)},
			},
		})
		if err != nil {
			return i, fmt.Errorf("send job %s (%s): %w", m.EventID, m.Type, err)
		}
	}
	return len(msgs), nil
}
