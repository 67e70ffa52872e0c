package conformance_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/sqsfix"
	"github.com/clubdev/club/localcloud/testkit"
)

var queueSeq atomic.Int64

// newQueue creates a queue of its own for a case (the engines live as long
// as the test binary) and returns its URL.
func newQueue(t *testing.T, c *sqs.Client, prefix string, attrs map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, queueSeq.Add(1))
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	require.NoError(t, err)
	return aws.ToString(q.QueueUrl)
}

// receiveOne long-polls until a message arrives (within patience).
func receiveOne(t *testing.T, c *sqs.Client, in *sqs.ReceiveMessageInput) sqstypes.Message {
	t.Helper()
	deadline := patience.Deadline()
	for {
		in.MaxNumberOfMessages, in.WaitTimeSeconds = 1, 1
		out, err := c.ReceiveMessage(context.Background(), in)
		require.NoError(t, err)
		if len(out.Messages) == 1 {
			return out.Messages[0]
		}
		require.True(t, time.Now().Before(deadline), "no message within %s", patience.Wait())
	}
}

// md5OfAttributes is MD5OfMessageAttributes as the SQS developer guide
// defines it: the attributes sorted by name, each encoded as the name, the
// data type and the value, every part preceded by its length as a 4-byte
// big-endian integer, a transport byte (1 string, 2 binary) before the
// value.
func md5OfAttributes(attrs map[string]sqstypes.MessageAttributeValue) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	part := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint32(len(b)))
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		part([]byte(n))
		part([]byte(aws.ToString(a.DataType)))
		if a.BinaryValue != nil {
			h.Write([]byte{2})
			part(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			part([]byte(aws.ToString(a.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

var threeAttributes = map[string]sqstypes.MessageAttributeValue{
	"event.type": {DataType: aws.String("String"), StringValue: aws.String("enrollment.created")},
	"attempt":    {DataType: aws.String("Number"), StringValue: aws.String("3")},
	"signature":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xfe, 0xff}},
}

// ReceiveMessage returns only the message attributes named in
// MessageAttributeNames ("All" or ".*" for all, a "prefix.*" for those
// under it) and only the system attributes named in
// MessageSystemAttributeNames; without them, none.
func TestSQSReceiveReturnsOnlyTheAttributesAskedFor(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-attrs", map[string]string{"VisibilityTimeout": "0"})
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("attributes"), MessageAttributes: threeAttributes})
	require.NoError(t, err)

	for _, tc := range []struct {
		names, system []string
		wantNames     []string
		wantSystem    []string
	}{
		{nil, nil, nil, nil},
		{[]string{"event.type"}, []string{"SentTimestamp"}, []string{"event.type"}, []string{"SentTimestamp"}},
		{[]string{"All"}, []string{"ApproximateReceiveCount", "SentTimestamp"}, []string{"attempt", "event.type", "signature"}, []string{"ApproximateReceiveCount", "SentTimestamp"}},
		{[]string{"event.*", "attempt"}, nil, []string{"attempt", "event.type"}, nil},
	} {
		in := &sqs.ReceiveMessageInput{QueueUrl: &q, MessageAttributeNames: tc.names}
		for _, s := range tc.system {
			in.MessageSystemAttributeNames = append(in.MessageSystemAttributeNames, sqstypes.MessageSystemAttributeName(s))
		}
		m := receiveOne(t, c, in)
		var gotNames, gotSystem []string
		for n := range m.MessageAttributes {
			gotNames = append(gotNames, n)
		}
		for n := range m.Attributes {
			gotSystem = append(gotSystem, n)
		}
		sort.Strings(gotNames)
		sort.Strings(gotSystem)
		require.Equal(t, tc.wantNames, gotNames, "message attributes for %v", tc.names)
		require.Equal(t, tc.wantSystem, gotSystem, "system attributes for %v", tc.system)
		if len(tc.wantNames) > 0 {
			want := map[string]sqstypes.MessageAttributeValue{}
			for _, n := range tc.wantNames {
				want[n] = threeAttributes[n]
			}
			require.Equal(t, md5OfAttributes(want), aws.ToString(m.MD5OfMessageAttributes), "the MD5 of the attributes returned")
		} else {
			require.Nil(t, m.MD5OfMessageAttributes)
		}
	}
}

// SendMessage answers MD5OfMessageAttributes, and a receive gives the
// attributes back with the same digest and values (binary ones included).
func TestSQSMD5OfMessageAttributes(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-md5", nil)
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("digest"), MessageAttributes: threeAttributes})
	require.NoError(t, err)
	require.Equal(t, md5OfAttributes(threeAttributes), aws.ToString(sent.MD5OfMessageAttributes))

	batch, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q, Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("digest"), MessageAttributes: threeAttributes},
	}})
	require.NoError(t, err)
	require.Len(t, batch.Successful, 1)
	require.Equal(t, md5OfAttributes(threeAttributes), aws.ToString(batch.Successful[0].MD5OfMessageAttributes))

	m := receiveOne(t, c, &sqs.ReceiveMessageInput{QueueUrl: &q, MessageAttributeNames: []string{"All"}})
	require.Equal(t, md5OfAttributes(threeAttributes), aws.ToString(m.MD5OfMessageAttributes))
	require.Equal(t, threeAttributes["signature"].BinaryValue, m.MessageAttributes["signature"].BinaryValue)
}

// A message larger than the queue's MaximumMessageSize (1 MiB at most,
// body and attributes together) is refused; one of exactly that size is
// accepted.
func TestSQSMessageOverTheSizeLimitIsRefused(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-size", map[string]string{"MaximumMessageSize": "1048576"})
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(strings.Repeat("x", 1<<20))})
	if testkit.Engine() == engine.Moto {
		// moto cannot read a request that large (it answered
		// NonExistentQueue): the local cloud refuses it, saying why.
		refusedByDesign(t, err, sqsfix.FeatureLargeRequest)
	} else {
		require.NoError(t, err, "exactly 1 MiB is allowed")
	}
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(strings.Repeat("x", 1<<20+1))})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr, "1 MiB + 1 byte is refused")
	require.Equal(t, "InvalidParameterValue", apiErr.ErrorCode())
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(strings.Repeat("x", 1<<20-4)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}})
	require.ErrorAs(t, err, &apiErr, "attributes count toward the size")

	small := newQueue(t, c, "conformance-size-small", map[string]string{"MaximumMessageSize": "1024"})
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &small, MessageBody: aws.String(strings.Repeat("x", 1025))})
	require.ErrorAs(t, err, &apiErr, "the queue's own limit")
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &small, Entries: []sqstypes.SendMessageBatchRequestEntry{
		{Id: aws.String("big"), MessageBody: aws.String(strings.Repeat("x", 1025))},
	}})
	if err == nil {
		require.Empty(t, out.Successful, "a batch entry over the limit is not sent")
	}
}

// When a received message's visibility timeout runs out, it counts as
// visible again in ApproximateNumberOfMessages (and no longer as not
// visible) without anybody receiving.
func TestSQSMessageVisibleAgainIsCountedAsVisible(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-visible-count", nil)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("count me")})
	require.NoError(t, err)
	receiveOne(t, c, &sqs.ReceiveMessageInput{QueueUrl: &q, VisibilityTimeout: 1})
	counts := func() (visible, notVisible string) {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q, AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		require.NoError(t, err)
		return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
	}
	v, nv := counts()
	require.Equal(t, []string{"0", "1"}, []string{v, nv}, "in flight")
	deadline := patience.Deadline()
	for {
		if v, nv = counts(); v == "1" {
			break
		}
		require.True(t, time.Now().Before(deadline), "still counted in flight after its visibility timeout ran out (visible %s, not visible %s)", v, nv)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "0", nv)
}

// A message sent with DelaySeconds is not received, and counts as delayed,
// until the delay has passed; then it is received.
func TestSQSDelaySecondsHoldsTheMessageBack(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-timers.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-delay", nil)
	const delay = 2 * time.Second
	sent := time.Now()
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("later"), DelaySeconds: int32(delay / time.Second)})
	require.NoError(t, err)
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed, sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	require.NoError(t, err)
	require.Equal(t, "1", out.Attributes["ApproximateNumberOfMessagesDelayed"])
	require.Equal(t, "0", out.Attributes["ApproximateNumberOfMessages"])
	first, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Empty(t, first.Messages, "not before its delay")
	m := receiveOne(t, c, &sqs.ReceiveMessageInput{QueueUrl: &q})
	require.Equal(t, "later", aws.ToString(m.Body))
	require.GreaterOrEqual(t, time.Since(sent), delay-100*time.Millisecond, "received only after the delay (SentTimestamp has ms precision)")
}

// A received message is hidden for its visibility timeout: a second
// receive gets nothing until it runs out, then the message again with its
// receive count at 2.
func TestSQSVisibilityTimeoutHidesTheMessage(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-visibility", nil)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("hidden")})
	require.NoError(t, err)
	const timeout = 2 * time.Second
	receiveOne(t, c, &sqs.ReceiveMessageInput{QueueUrl: &q, VisibilityTimeout: int32(timeout / time.Second)})
	received := time.Now()
	again, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Empty(t, again.Messages, "hidden while in flight")
	m := receiveOne(t, c, &sqs.ReceiveMessageInput{QueueUrl: &q, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	require.GreaterOrEqual(t, time.Since(received), timeout-100*time.Millisecond, "not before the timeout ran out")
	require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
}

// An SQS error in the JSON protocol carries the query-compatible code in
// the x-amzn-query-error header ("code;Sender"), which SDKs of the Query
// era read: GetQueueUrl of a missing queue is
// AWS.SimpleQueueService.NonExistentQueue.
func TestSQSErrorsCarryTheQueryCompatibleCode(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-faqs.html")
	cfg := msgConfig(t)
	c := sqs.NewFromConfig(cfg)
	_, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("conformance-no-such-queue")})
	var missing *sqstypes.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)
	require.Equal(t, "AWS.SimpleQueueService.NonExistentQueue", missing.ErrorCode(), "the SDK reads the code from x-amzn-query-error")

	req, err := http.NewRequest(http.MethodPost, aws.ToString(cfg.BaseEndpoint)+"/", strings.NewReader(`{"QueueName":"conformance-no-such-queue"}`))
	require.NoError(t, err)
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueUrl")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "AWS.SimpleQueueService.NonExistentQueue;Sender", resp.Header.Get("X-Amzn-Query-Error"))
}

// A queue's URL names the endpoint the client reached (on AWS, the
// regional SQS endpoint), so that it can be used as it is.
func TestSQSQueueURLNamesTheEndpoint(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-queue-message-identifiers.html")
	ctx := context.Background()
	cfg := msgConfig(t)
	c := sqs.NewFromConfig(cfg)
	q := newQueue(t, c, "conformance-url", nil)
	endpoint, err := url.Parse(aws.ToString(cfg.BaseEndpoint))
	require.NoError(t, err)
	got, err := url.Parse(q)
	require.NoError(t, err)
	require.Equal(t, endpoint.Host, got.Host, "CreateQueue's QueueUrl")
	byName, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q[strings.LastIndexByte(q, '/')+1:])})
	require.NoError(t, err)
	require.Equal(t, q, aws.ToString(byName.QueueUrl), "GetQueueUrl")
	list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("conformance-url")})
	require.NoError(t, err)
	require.Contains(t, list.QueueUrls, q, "ListQueues")
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("by its URL")})
	require.NoError(t, err)
}
