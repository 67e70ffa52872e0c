package sqsage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sqsage"
)

// TestAgeWithoutReceiving: the tracker in front of kumo knows a queue's
// oldest message from the sends, receives and deletes that pass it, and
// asking for the age receives nothing: no receive count changes, no message
// is hidden.
func TestAgeWithoutReceiving(t *testing.T) {
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	now := time.Now()
	tracker := sqsage.New(httputil.NewSingleHostReverseProxy(target), func() time.Time { return now })
	mux := http.NewServeMux()
	mux.Handle("/_club/queues/age", tracker.Handler())
	mux.Handle("/", tracker)
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	client := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(front.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1,
	})
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("age-q")})
	require.NoError(t, err)
	qURL := aws.ToString(q.QueueUrl)

	age := func() sqsage.Age {
		t.Helper()
		resp, err := http.Get(front.URL + "/_club/queues/age?queue=" + url.QueryEscape(qURL))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var a sqsage.Age
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		return a
	}
	require.Equal(t, sqsage.Age{Queue: "age-q", Complete: true, Known: true}, age())

	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("first")})
	require.NoError(t, err)
	first := now
	now = now.Add(90 * time.Second)
	_, err = client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("second")}, {Id: aws.String("b"), MessageBody: aws.String("third")},
	}})
	require.NoError(t, err)
	now = now.Add(30 * time.Second)

	for range 3 { // asking again and again receives nothing
		a := age()
		require.Equal(t, 3, a.Messages)
		require.True(t, a.Complete)
		require.Equal(t, 120.0, a.AgeSeconds)
		require.WithinDuration(t, first, *a.OldestSentAt, time.Millisecond)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	require.NoError(t, err)
	require.Equal(t, "3", attrs.Attributes["ApproximateNumberOfMessages"], "every message still visible")
	require.Equal(t, "0", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"])

	// A consumer receives all three (each once) and deletes the oldest: the
	// age is the next one's.
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	for _, m := range out.Messages {
		require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"], "only the consumer received it")
		if aws.ToString(m.Body) == "first" {
			_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
	a := age()
	require.Equal(t, 2, a.Messages)
	// A receive corrects a message's time to the SentTimestamp the queue
	// keeps (real time here, 120 s before the test's clock).
	require.InDelta(t, 120.0, a.AgeSeconds, 1)

	var entries []types.DeleteMessageBatchRequestEntry
	for i, m := range out.Messages {
		if aws.ToString(m.Body) != "first" {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	_, err = client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries})
	require.NoError(t, err)
	require.Equal(t, sqsage.Age{Queue: "age-q", Complete: true, Known: true}, age())
}

// TestUndatedBacklogIsNotZeroSecondsOld: messages SNS delivered and nobody
// received do not pass the tracker. On main their queue read "0 s old"
// (Complete false, AgeSeconds 0) however long they waited. Now the first
// reading that sees them says the age is not known, and every later one
// gives the time since then as a lower bound.
func TestUndatedBacklogIsNotZeroSecondsOld(t *testing.T) {
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	now := time.Now()
	tracker := sqsage.New(httputil.NewSingleHostReverseProxy(target), func() time.Time { return now })
	front := httptest.NewServer(tracker)
	t.Cleanup(front.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(front.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1}
	client, topics := sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg)
	ctx := context.Background()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("undated-q")})
	require.NoError(t, err)
	arn, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("undated-t")})
	require.NoError(t, err)
	_, err = topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn.Attributes["QueueArn"])})
	require.NoError(t, err)
	_, err = topics.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("delivered by SNS")})
	require.NoError(t, err)

	a := tracker.Oldest(*q.QueueUrl)
	require.Equal(t, 1, a.Untracked, "kumo holds a message the tracker did not see")
	require.False(t, a.Known, "its age is not known: not 0 s")
	now = now.Add(90 * time.Second)
	a = tracker.Oldest(*q.QueueUrl)
	require.True(t, a.Known)
	require.False(t, a.Complete, "a lower bound")
	require.Equal(t, 90.0, a.AgeSeconds, "it has waited at least since the first reading saw it")
}
