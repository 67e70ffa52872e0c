package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/relay"
)

// fakeSNS records calls and fails entries on demand.
type fakeSNS struct {
	mu      sync.Mutex
	singles []*sns.PublishInput
	batches []*sns.PublishBatchInput
	// failBody fails Publish calls and batch entries whose body contains it.
	failBody string
	// callErr fails whole calls.
	callErr error
	// dropResult leaves the entry with this body out of the batch response.
	dropResult string
}

func (f *fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.singles = append(f.singles, in)
	if f.callErr != nil {
		return nil, f.callErr
	}
	if f.failBody != "" && strings.Contains(aws.ToString(in.Message), f.failBody) {
		return nil, errors.New("InternalError: try again")
	}
	return &sns.PublishOutput{MessageId: aws.String(strconv.Itoa(len(f.singles)))}, nil
}

func (f *fakeSNS) PublishBatch(_ context.Context, in *sns.PublishBatchInput, _ ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, in)
	if f.callErr != nil {
		return nil, f.callErr
	}
	out := &sns.PublishBatchOutput{}
	// Answer out of order, as nothing promises otherwise.
	for i := len(in.PublishBatchRequestEntries) - 1; i >= 0; i-- {
		e := in.PublishBatchRequestEntries[i]
		switch body := aws.ToString(e.Message); {
		case f.dropResult != "" && strings.Contains(body, f.dropResult):
		case f.failBody != "" && strings.Contains(body, f.failBody):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false,
			})
		default:
			out.Successful = append(out.Successful, types.PublishBatchResultEntry{Id: e.Id, MessageId: aws.String("m")})
		}
	}
	return out, nil
}

func testMessages(n, bodySize int) []relay.Message {
	msgs := make([]relay.Message, n)
	for i := range msgs {
		body := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", bodySize))
		msgs[i] = relay.Message{
			EventID: fmt.Sprintf("event-%02d", i), Type: events.TypeEnrollmentCreated, AggregateID: "a", Body: []byte(body),
		}
	}
	return msgs
}

func attrs(t *testing.T, m map[string]types.MessageAttributeValue) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range m {
		require.Equal(t, "String", aws.ToString(v.DataType), k)
		out[k] = aws.ToString(v.StringValue)
	}
	return out
}

const testTopic = "arn:aws:sns:us-east-1:000000000000:club-events"

func TestSNSPublisherOnePublishPerMessage(t *testing.T) {
	t.Parallel()
	api := &fakeSNS{failBody: `"n":3,`}
	p, err := relay.NewSNSPublisher(api, relay.SNSConfig{TopicARN: testTopic})
	require.NoError(t, err)
	msgs := testMessages(5, 0)

	n, err := p.Publish(context.Background(), msgs)
	require.Equal(t, 3, n)
	require.ErrorContains(t, err, "publish event event-03 (enrollment.created) to "+testTopic)
	require.ErrorContains(t, err, "InternalError")
	require.Len(t, api.singles, 4, "stops at the failed message")
	for i, in := range api.singles {
		require.Equal(t, testTopic, aws.ToString(in.TopicArn))
		require.Equal(t, string(msgs[i].Body), aws.ToString(in.Message))
		require.Equal(t, map[string]string{"type": "enrollment.created", "event_id": msgs[i].EventID}, attrs(t, in.MessageAttributes))
	}
	require.Empty(t, api.batches)
}

func TestSNSPublisherBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		msgs        []relay.Message
		api         *fakeSNS
		wantN       int
		wantErr     string
		wantBatches []int
	}{
		{name: "ten per call", msgs: testMessages(23, 0), api: &fakeSNS{}, wantN: 23, wantBatches: []int{10, 10, 3}},
		{name: "256 KiB per call", msgs: testMessages(5, 100*1024), api: &fakeSNS{}, wantN: 5, wantBatches: []int{2, 2, 1}},
		{name: "a failed entry ends the run", msgs: testMessages(23, 0), api: &fakeSNS{failBody: `"n":14,`},
			wantN: 14, wantErr: "event-14 (enrollment.created)", wantBatches: []int{10, 10}},
		{name: "an entry without a result is not published", msgs: testMessages(8, 0), api: &fakeSNS{dropResult: `"n":6,`},
			wantN: 6, wantErr: "no result for this entry", wantBatches: []int{8}},
		{name: "a failed call publishes nothing of its batch", msgs: testMessages(12, 0), api: &fakeSNS{callErr: errors.New("AuthorizationError")},
			wantN: 0, wantErr: "event-00", wantBatches: []int{10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := relay.NewSNSPublisher(tt.api, relay.SNSConfig{TopicARN: testTopic, Batch: true})
			require.NoError(t, err)
			n, err := p.Publish(context.Background(), tt.msgs)
			require.Equal(t, tt.wantN, n)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.wantErr)
			}
			var sizes []int
			next := 0
			for _, b := range tt.api.batches {
				require.Equal(t, testTopic, aws.ToString(b.TopicArn))
				sizes = append(sizes, len(b.PublishBatchRequestEntries))
				ids := map[string]bool{}
				for _, e := range b.PublishBatchRequestEntries {
					require.False(t, ids[aws.ToString(e.Id)], "entry ids are unique in a batch")
					ids[aws.ToString(e.Id)] = true
					m := tt.msgs[next]
					require.Equal(t, string(m.Body), aws.ToString(e.Message), "messages keep their order")
					require.Equal(t, map[string]string{"type": string(m.Type), "event_id": m.EventID}, attrs(t, e.MessageAttributes))
					next++
				}
			}
			require.Equal(t, tt.wantBatches, sizes)
			require.Empty(t, tt.api.singles)
		})
	}
}

func TestNewSNSPublisherValidates(t *testing.T) {
	t.Parallel()
	_, err := relay.NewSNSPublisher(nil, relay.SNSConfig{})
	require.ErrorContains(t, err, "nil client")
	require.ErrorContains(t, err, "TopicARN is required")
}
