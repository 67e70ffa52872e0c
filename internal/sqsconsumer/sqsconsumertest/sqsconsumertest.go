// Package sqsconsumertest helps test code built on package sqsconsumer
// without a queue: [SQS] is an in-memory stand-in for the two SQS calls a
// Consumer makes, recording dead letters and retry delays, and [Record] and
// [Event] build the events Lambda delivers. Tests of the consumer's own
// behaviour against a real queue live in package sqsconsumer. Everything
// here is safe for concurrent use.
package sqsconsumertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// DeadLetter is a message a consumer sent to its dead-letter queue.
type DeadLetter struct {
	QueueURL string
	Body     string
	// Attributes are the string attributes (dlq_code, dlq_reason, type, …).
	Attributes map[string]string
	// GroupID and DeduplicationID are set for a FIFO dead-letter queue.
	GroupID, DeduplicationID string
	// Delay is the copy's DelaySeconds (a retry's copy).
	Delay time.Duration
}

// Copy is a retry's copy a consumer with a retry budget sent back to its
// own queue; it has the fields of a DeadLetter.
type Copy = DeadLetter

// SQS records SendMessage and ChangeMessageVisibility calls. The copies it
// records can also be received again, as a consumer's Release receives its
// parking queue (ReceiveMessage, SendMessageBatch, DeleteMessageBatch and
// GetQueueAttributes): a copy received is in flight until it is deleted
// (there is no visibility timeout). The zero value is ready to use.
type SQS struct {
	mu          sync.Mutex
	deadLetters []DeadLetter
	copies      []Copy
	received    map[int]bool // copies received (by index), until deleted
	deleted     map[int]bool
	visibility  map[string]time.Duration // receipt handle → last value set
	failSends   error
}

// FailSends makes every later SendMessage fail with err (nil to stop).
func (s *SQS) FailSends(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failSends = err
}

// SendMessage records a dead letter (a message with a dlq_code attribute)
// or a retry's copy (any other).
func (s *SQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSends != nil {
		return nil, s.failSends
	}
	if in.QueueUrl == nil || in.MessageBody == nil {
		return nil, errors.New("sqsconsumertest: SendMessage without QueueUrl or MessageBody")
	}
	dl := DeadLetter{
		QueueURL: *in.QueueUrl, Body: *in.MessageBody, Attributes: map[string]string{},
		GroupID: aws.ToString(in.MessageGroupId), DeduplicationID: aws.ToString(in.MessageDeduplicationId),
		Delay: time.Duration(in.DelaySeconds) * time.Second,
	}
	for name, a := range in.MessageAttributes {
		if a.StringValue != nil {
			dl.Attributes[name] = *a.StringValue
		}
	}
	if _, ok := dl.Attributes["dlq_code"]; !ok {
		return &sqs.SendMessageOutput{MessageId: aws.String(s.addCopy(dl))}, nil
	}
	s.deadLetters = append(s.deadLetters, dl)
	return &sqs.SendMessageOutput{MessageId: aws.String("dead-letter-" + strconv.Itoa(len(s.deadLetters)))}, nil
}

// addCopy records a copy and returns its message id (its receipt handle
// when received is the same).
func (s *SQS) addCopy(c Copy) string {
	s.copies = append(s.copies, c)
	return "copy-" + strconv.Itoa(len(s.copies))
}

// copyIndex is the index of the copy with the given id or receipt handle.
func copyIndex(id string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "copy-"))
	return n - 1, err == nil && strings.HasPrefix(id, "copy-")
}

// ReceiveMessage hands out up to MaxNumberOfMessages copies sent to the
// queue and not received yet, oldest first, without waiting.
func (s *SQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.received == nil {
		s.received = map[int]bool{}
	}
	out := &sqs.ReceiveMessageOutput{}
	for i, c := range s.copies {
		if len(out.Messages) == int(max(in.MaxNumberOfMessages, 1)) {
			break
		}
		if c.QueueURL != aws.ToString(in.QueueUrl) || s.received[i] || s.deleted[i] {
			continue
		}
		s.received[i] = true
		id := "copy-" + strconv.Itoa(i+1)
		m := types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String(id), Body: aws.String(c.Body), MessageAttributes: map[string]types.MessageAttributeValue{}}
		for name, v := range c.Attributes {
			m.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
		out.Messages = append(out.Messages, m)
	}
	return out, nil
}

// SendMessageBatch records each entry as SendMessage would.
func (s *SQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		sent, err := s.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: in.QueueUrl, MessageBody: e.MessageBody, MessageAttributes: e.MessageAttributes, DelaySeconds: e.DelaySeconds})
		if err != nil {
			return nil, err
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: sent.MessageId})
	}
	return out, nil
}

// DeleteMessageBatch deletes received copies by their receipt handles.
func (s *SQS) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted == nil {
		s.deleted = map[int]bool{}
	}
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		i, ok := copyIndex(aws.ToString(e.ReceiptHandle))
		if !ok || !s.received[i] {
			return nil, fmt.Errorf("sqsconsumertest: DeleteMessageBatch of %q, which was not received", aws.ToString(e.ReceiptHandle))
		}
		s.deleted[i] = true
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// GetQueueAttributes answers ApproximateNumberOfMessagesNotVisible: the
// copies of the queue received and not deleted.
func (s *SQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0
	for i, c := range s.copies {
		if c.QueueURL == aws.ToString(in.QueueUrl) && s.received[i] && !s.deleted[i] {
			held++
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible): strconv.Itoa(held),
	}}, nil
}

// Waiting returns the copies sent to queueURL that were not received since,
// oldest first.
func (s *SQS) Waiting(queueURL string) []Copy {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Copy
	for i, c := range s.copies {
		if c.QueueURL == queueURL && !s.received[i] && !s.deleted[i] {
			c.Attributes = maps.Clone(c.Attributes)
			out = append(out, c)
		}
	}
	return out
}

// ChangeMessageVisibility records the delay set for a receipt handle.
func (s *SQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.visibility == nil {
		s.visibility = map[string]time.Duration{}
	}
	s.visibility[aws.ToString(in.ReceiptHandle)] = time.Duration(in.VisibilityTimeout) * time.Second
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// DeadLetters returns the dead letters sent so far, in order.
func (s *SQS) DeadLetters() []DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DeadLetter, len(s.deadLetters))
	for i, dl := range s.deadLetters {
		dl.Attributes = maps.Clone(dl.Attributes)
		out[i] = dl
	}
	return out
}

// Copies returns the retries' copies sent so far, in order.
func (s *SQS) Copies() []Copy {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Copy, len(s.copies))
	for i, c := range s.copies {
		c.Attributes = maps.Clone(c.Attributes)
		out[i] = c
	}
	return out
}

// Visibility returns the last visibility timeout set for the message with
// the given id (see Record for receipt handles); ok is false if none was.
func (s *SQS) Visibility(messageID string) (d time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok = s.visibility[ReceiptHandle(messageID)]
	return d, ok
}

// ReceiptHandle is the receipt handle Record gives the message id.
func ReceiptHandle(messageID string) string { return "receipt-" + messageID }

// Record builds a message as Lambda delivers it from a standard queue:
// receiveCount is its ApproximateReceiveCount, sentAt its SentTimestamp, and
// attrs its string message attributes (such as type and event_id).
func Record(messageID, body string, receiveCount int, sentAt time.Time, attrs map[string]string) events.SQSMessage {
	r := events.SQSMessage{
		MessageId:     messageID,
		ReceiptHandle: ReceiptHandle(messageID),
		Body:          body,
		Attributes: map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(receiveCount),
			"SentTimestamp":           strconv.FormatInt(sentAt.UnixMilli(), 10),
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSource:       "aws:sqs",
	}
	for name, v := range attrs {
		r.MessageAttributes[name] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
	}
	return r
}

// Event builds a batch.
func Event(records ...events.SQSMessage) events.SQSEvent { return events.SQSEvent{Records: records} }

// FailedIDs lists the message ids a partial batch response reports, in
// order; never nil.
func FailedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}
