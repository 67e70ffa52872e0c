package sqsconsumer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/testkit"
)

// client talks to the engine the tests run on now (testkit: the package runs
// once on kumo and once on moto), shared by the test binary; each test
// creates queues of its own.
var client *sqs.Client

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		client = sqs.New(sqs.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(url),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		})
	}))
}

var queueSeq atomic.Int64

// queues is a source queue and its dead-letter queue.
type queues struct {
	url, dlqURL string
}

// newQueues creates a queue with a redrive policy to a fresh DLQ.
func newQueues(t *testing.T, visibility time.Duration, maxReceiveCount int) queues {
	t.Helper()
	ctx := context.Background()
	n := queueSeq.Add(1)
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q-%d-dlq", n))})
	require.NoError(t, err)
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	redrive, err := json.Marshal(map[string]any{"deadLetterTargetArn": attrs.Attributes["QueueArn"], "maxReceiveCount": maxReceiveCount})
	require.NoError(t, err)
	src, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(fmt.Sprintf("q-%d", n)),
		Attributes: map[string]string{
			"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second)),
			"RedrivePolicy":     string(redrive),
		},
	})
	require.NoError(t, err)
	return queues{url: aws.ToString(src.QueueUrl), dlqURL: aws.ToString(dlq.QueueUrl)}
}

// send puts a message with the relay's string attributes on a queue.
func send(t *testing.T, queueURL, body string, attrs map[string]string) {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body), MessageAttributes: map[string]types.MessageAttributeValue{}}
	for k, v := range attrs {
		in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := client.SendMessage(context.Background(), in)
	require.NoError(t, err)
}

// receive polls the queue until it has received want messages or the
// deadline passes. Short polls: a long poll is not woken by a message whose
// visibility timeout ends.
func receive(t *testing.T, queueURL string, want int, within time.Duration) []types.Message {
	t.Helper()
	if within > 0 { // 0: one look
		within = patience.Within(within)
	}
	return receiveFor(t, queueURL, want, within)
}

// receiveFor polls the queue for as long as window, or until it has
// received want messages: for a check that nothing arrives within a window
// (window is then its length, not a deadline).
func receiveFor(t *testing.T, queueURL string, want int, window time.Duration) []types.Message {
	t.Helper()
	var got []types.Message
	deadline := time.Now().Add(window)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         10,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		got = append(got, out.Messages...)
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
		<-tick.C
	}
}

// lambdaEvent converts received messages into the event an SQS event source
// mapping would invoke the function with.
func lambdaEvent(msgs []types.Message) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		r := events.SQSMessage{
			MessageId:         aws.ToString(m.MessageId),
			ReceiptHandle:     aws.ToString(m.ReceiptHandle),
			Body:              aws.ToString(m.Body),
			Attributes:        m.Attributes,
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource:       "aws:sqs",
		}
		for k, a := range m.MessageAttributes {
			r.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
		}
		ev.Records = append(ev.Records, r)
	}
	return ev
}

// settle does what the event source mapping does with a partial batch
// response: it deletes every message not reported as failed.
func settle(t *testing.T, queueURL string, ev events.SQSEvent, resp events.SQSEventResponse) {
	t.Helper()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		if failed[r.MessageId] {
			continue
		}
		_, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(r.ReceiptHandle)})
		require.NoError(t, err)
	}
}

// stringAttrs returns the string message attributes of a received message.
func stringAttrs(m types.Message) map[string]string {
	out := map[string]string{}
	for k, a := range m.MessageAttributes {
		if a.StringValue != nil {
			out[k] = *a.StringValue
		}
	}
	return out
}

// jsonLines parses every line of buf as a JSON object.
func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %s", sc.Text())
		out = append(out, m)
	}
	return out
}
