package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
)

// The message attributes every published message carries. Subscriptions
// filter on AttrType; consumers read AttrEventID without parsing the body.
const (
	AttrType    = "type"
	AttrEventID = "event_id"
)

// PublishBatch limits (AWS): at most 10 entries and 256 KiB in total.
const (
	maxBatchEntries = 10
	maxBatchBytes   = 256 * 1024
)

// SNSAPI is the part of *sns.Client the publisher uses.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, in *sns.PublishBatchInput, opts ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

// SNSConfig configures an SNSPublisher.
type SNSConfig struct {
	// TopicARN is the destination topic (required).
	TopicARN string
	// Batch sends up to 10 messages per PublishBatch call instead of one
	// Publish per message. Off by default: not every SNS implementation has
	// PublishBatch (kumo alone does not; the local cloud's front adds it).
	Batch bool
}

// SNSPublisher publishes messages to one SNS topic. It is safe for concurrent
// use.
type SNSPublisher struct {
	client SNSAPI
	cfg    SNSConfig
}

var _ Publisher = (*SNSPublisher)(nil)

// NewSNSPublisher returns a publisher to cfg.TopicARN.
func NewSNSPublisher(client SNSAPI, cfg SNSConfig) (*SNSPublisher, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("sns publisher: nil client"))
	}
	if cfg.TopicARN == "" {
		errs = append(errs, errors.New("sns publisher: TopicARN is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &SNSPublisher{client: client, cfg: cfg}, nil
}

// Publish sends msgs in order, one Publish call each, or in PublishBatch
// calls when batching is on. It stops at the first message that fails.
func (p *SNSPublisher) Publish(ctx context.Context, msgs []Message) (int, error) {
	if p.cfg.Batch {
		return p.publishBatches(ctx, msgs)
	}
	for i, m := range msgs {
		_, err := p.client.Publish(ctx, &sns.PublishInput{
			TopicArn:          aws.String(p.cfg.TopicARN),
			Message:           aws.String(string(m.Body)),
			MessageAttributes: attributes(m),
		})
		if err != nil {
			return i, p.failed(m, err)
		}
	}
	return len(msgs), nil
}

func (p *SNSPublisher) publishBatches(ctx context.Context, msgs []Message) (int, error) {
	for start := 0; start < len(msgs); {
		end := batchEnd(msgs, start)
		n, err := p.publishBatch(ctx, msgs[start:end])
		if err != nil {
			return start + n, err
		}
		start = end
	}
	return len(msgs), nil
}

// batchEnd returns the end of the batch that starts at msgs[start]: as many
// messages as fit the entry and size limits, and always at least one (a
// message too big for any batch fails on its own, with SNS's error).
func batchEnd(msgs []Message, start int) int {
	end, size := start, 0
	for end < len(msgs) && end-start < maxBatchEntries {
		s := messageSize(msgs[end])
		if end > start && size+s > maxBatchBytes {
			break
		}
		size += s
		end++
	}
	return end
}

// messageSize is what a message counts against SNS's size limit: the body
// plus each attribute's name, data type and value.
func messageSize(m Message) int {
	size := len(m.Body)
	for name, v := range attributes(m) {
		size += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
	}
	return size
}

func (p *SNSPublisher) publishBatch(ctx context.Context, batch []Message) (int, error) {
	entries := make([]types.PublishBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = types.PublishBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(i)),
			Message:           aws.String(string(m.Body)),
			MessageAttributes: attributes(m),
		}
	}
	out, err := p.client.PublishBatch(ctx, &sns.PublishBatchInput{
		TopicArn:                   aws.String(p.cfg.TopicARN),
		PublishBatchRequestEntries: entries,
	})
	if err != nil {
		return 0, p.failed(batch[0], err)
	}
	// Entries succeed or fail one by one; the batch is done up to the first
	// entry that is not reported successful.
	ok := make([]bool, len(batch))
	for _, s := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(s.Id)); err == nil && i >= 0 && i < len(batch) {
			ok[i] = true
		}
	}
	reasons := make(map[int]types.BatchResultErrorEntry, len(out.Failed))
	for _, f := range out.Failed {
		if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil {
			reasons[i] = f
		}
	}
	for i, m := range batch {
		if ok[i] {
			continue
		}
		f, known := reasons[i]
		if !known {
			return i, p.failed(m, errors.New("no result for this entry in the PublishBatch response"))
		}
		return i, p.failed(m, fmt.Errorf("%s (sender fault: %t): %s", aws.ToString(f.Code), f.SenderFault, aws.ToString(f.Message)))
	}
	return len(batch), nil
}

func (p *SNSPublisher) failed(m Message, err error) error {
	return fmt.Errorf("publish event %s (%s) to %s: %w", m.EventID, m.Type, p.cfg.TopicARN, err)
}

func attributes(m Message) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		AttrType:    {DataType: aws.String("String"), StringValue: aws.String(string(m.Type))},
		AttrEventID: {DataType: aws.String("String"), StringValue: aws.String(m.EventID)},
	}
}
