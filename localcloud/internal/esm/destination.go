package esm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Conditions under which a stream mapping discards records, as written in
// OnFailureRecord.RequestContext.Condition.
const (
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	ConditionRecordAgeExceeded      = "RecordAgeExceeded"
)

// OnFailureRecord is the document a stream mapping sends to its on-failure
// destination when it discards records: metadata about the failed batch,
// never the records themselves (the shape of AWS's invocation record for
// DynamoDB stream sources).
type OnFailureRecord struct {
	RequestContext FailureRequestContext `json:"requestContext"`
	// ResponseContext describes the last invocation; nil when the records
	// were discarded before any invocation returned.
	ResponseContext    *FailureResponseContext `json:"responseContext,omitempty"`
	Version            string                  `json:"version"`   // "1.0"
	Timestamp          string                  `json:"timestamp"` // RFC 3339, milliseconds, UTC
	DDBStreamBatchInfo StreamBatchInfo         `json:"DDBStreamBatchInfo"`
}

// FailureRequestContext identifies the failed invocation.
type FailureRequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// FailureResponseContext is the response of the last invocation.
type FailureResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	FunctionError   string `json:"functionError,omitempty"`
}

// StreamBatchInfo locates the discarded records in the stream.
type StreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// DestinationSender delivers an on-failure record to a destination given by
// ARN (an SQS queue or an SNS topic). A returned error means the record was
// not delivered; the caller retries.
type DestinationSender interface {
	SendToDestination(ctx context.Context, arn string, body []byte) error
}

// QueueSender is the part of the SQS API Destinations uses.
type QueueSender interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// TopicPublisher is the part of the SNS API Destinations uses.
type TopicPublisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var (
	_ QueueSender       = (*sqs.Client)(nil)
	_ TopicPublisher    = (*sns.Client)(nil)
	_ DestinationSender = (*Destinations)(nil)
)

// Destinations sends on-failure records with the SQS and SNS APIs. It is
// safe for concurrent use; queue URLs are looked up once per ARN.
type Destinations struct {
	queues QueueSender
	topics TopicPublisher

	mu   sync.Mutex
	urls map[string]string // queue ARN → URL
}

// NewDestinations returns a sender over the given clients. Either may be nil
// if no destination of that kind is used.
func NewDestinations(queues QueueSender, topics TopicPublisher) *Destinations {
	return &Destinations{queues: queues, topics: topics, urls: map[string]string{}}
}

// SendToDestination sends body as an SQS message or an SNS notification,
// depending on the service in the ARN. Each call sends once.
func (d *Destinations) SendToDestination(ctx context.Context, destination string, body []byte) error {
	a, err := parseARN(destination)
	if err != nil {
		return fmt.Errorf("on-failure destination: %w", err)
	}
	switch a.Service {
	case "sqs":
		if d.queues == nil {
			return fmt.Errorf("on-failure destination %s: no SQS client", destination)
		}
		url, err := d.queueURL(ctx, destination, a)
		if err != nil {
			return err
		}
		if _, err := d.queues.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
			return fmt.Errorf("send on-failure record to %s: %w", destination, err)
		}
		return nil
	case "sns":
		if d.topics == nil {
			return fmt.Errorf("on-failure destination %s: no SNS client", destination)
		}
		if _, err := d.topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(destination), Message: aws.String(string(body))}); err != nil {
			return fmt.Errorf("publish on-failure record to %s: %w", destination, err)
		}
		return nil
	default:
		return fmt.Errorf("on-failure destination %s: service %q is not sqs or sns", destination, a.Service)
	}
}

func (d *Destinations) queueURL(ctx context.Context, queueARN string, a arn) (string, error) {
	d.mu.Lock()
	url, ok := d.urls[queueARN]
	d.mu.Unlock()
	if ok {
		return url, nil
	}
	out, err := d.queues.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Resource), QueueOwnerAWSAccountId: aws.String(a.Account)})
	if err != nil {
		return "", fmt.Errorf("look up queue URL of %s: %w", queueARN, err)
	}
	url = aws.ToString(out.QueueUrl)
	if url == "" {
		return "", errors.New("look up queue URL of " + queueARN + ": empty URL")
	}
	d.mu.Lock()
	d.urls[queueARN] = url
	d.mu.Unlock()
	return url, nil
}
