package localcloud_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/internal/esm"
	"github.com/clubdev/club/localcloud/invoke"
)

// BenchmarkSQSLongPollsUnderLoad hammers one queue through the endpoint
// with many concurrent one-second long polls (no SDK retries, as the event
// source mapping's poller does) while senders keep it busy, and reports how
// many receives failed in transit ("lost-receives"). A lost receive may have
// taken messages, which then stay invisible for the visibility timeout.
func BenchmarkSQSLongPollsUnderLoad(b *testing.B) {
	ctx := context.Background()
	q, err := env.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("longpoll-load-%d", time.Now().UnixNano()))})
	require.NoError(b, err)
	client := sqs.NewFromConfig(env.cfg)
	const pollers, senders = 48, 8
	var received, sent, lost atomic.Int64
	var mu sync.Mutex
	errs := map[string]int{}
	for i := 0; i < b.N; i++ {
		runCtx, cancel := context.WithTimeout(ctx, 10*time.Second) // patience:exempt the length of one measured run, not a wait
		var wg sync.WaitGroup
		for range pollers {
			wg.Go(func() {
				for runCtx.Err() == nil {
					out, err := client.ReceiveMessage(runCtx, &sqs.ReceiveMessageInput{
						QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
						MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
					}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
					if err != nil {
						if runCtx.Err() == nil {
							lost.Add(1)
							mu.Lock()
							errs[err.Error()]++
							mu.Unlock()
						}
						continue
					}
					received.Add(int64(len(out.Messages)))
					if len(out.Messages) == 0 {
						continue
					}
					entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
					for j, m := range out.Messages {
						entries[j] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), ReceiptHandle: m.ReceiptHandle}
					}
					_, _ = client.DeleteMessageBatch(runCtx, &sqs.DeleteMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries})
				}
			})
		}
		for range senders {
			wg.Go(func() { sendUntilDone(runCtx, client, *q.QueueUrl, &sent) })
		}
		wg.Wait()
		cancel()
	}
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.Logf("%d× %s", errs[k], k)
	}
	b.ReportMetric(float64(lost.Load()), "lost-receives")
	b.ReportMetric(float64(sent.Load())/float64(b.N), "sent/run")
	b.ReportMetric(float64(received.Load())/float64(b.N), "received/run")
}

// BenchmarkSQSPollersUnderLoad runs the event source mapping's own poller
// (esm.SQSPoller, scaling up to its MaximumConcurrency) on several queues
// kept full by senders, with an invoker that writes one DynamoDB item per
// batch through the endpoint, and reports the receives the pollers logged as
// failed ("lost-receives").
func BenchmarkSQSPollersUnderLoad(b *testing.B) {
	ctx := context.Background()
	const queues, sendersPerQueue = 6, 2
	suffix := fmt.Sprint(time.Now().UnixNano())
	table := "longpoll-load-" + suffix
	db := dynamodb.NewFromConfig(env.cfg)
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	require.NoError(b, err)
	client := sqs.NewFromConfig(env.cfg)
	logs := &countingHandler{counts: map[string]int{}}
	inv := &putItemInvoker{db: db, table: table}
	var sent atomic.Int64
	for i := 0; i < b.N; i++ {
		runCtx, cancel := context.WithTimeout(ctx, 10*time.Second) // patience:exempt the length of one measured run, not a wait
		var wg sync.WaitGroup
		for qi := range queues {
			name := fmt.Sprintf("longpoll-esm-%s-%d-%d", suffix, i, qi)
			q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
			require.NoError(b, err)
			p, err := esm.NewSQSPoller(esm.SQSMapping{
				UUID: name, FunctionName: "load", QueueURL: *q.QueueUrl,
				QueueARN:           "arn:aws:sqs:" + localcloud.Region + ":" + localcloud.AccountID + ":" + name,
				MaximumConcurrency: 10, Enabled: true,
			}, client, inv, slog.New(logs))
			require.NoError(b, err)
			wg.Go(func() { _ = p.Run(runCtx) })
			for range sendersPerQueue {
				wg.Go(func() { sendUntilDone(runCtx, client, *q.QueueUrl, &sent) })
			}
		}
		wg.Wait()
		cancel()
	}
	for msg, n := range logs.snapshot() {
		b.Logf("%d× %s", n, msg)
	}
	b.ReportMetric(float64(logs.count("receive failed")), "lost-receives")
	b.ReportMetric(float64(inv.batches.Load())/float64(b.N), "batches/run")
	b.ReportMetric(float64(sent.Load())/float64(b.N), "sent/run")
}

// sendUntilDone sends batches of ten 512-byte messages to queueURL until ctx
// is done, counting the messages sent.
func sendUntilDone(ctx context.Context, client *sqs.Client, queueURL string, sent *atomic.Int64) {
	for ctx.Err() == nil {
		entries := make([]sqstypes.SendMessageBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: aws.String(strings.Repeat("x", 512))}
		}
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries}); err == nil {
			sent.Add(int64(len(entries)))
		}
	}
}

// putItemInvoker stands in for a function: one PutItem per batch.
type putItemInvoker struct {
	db      *dynamodb.Client
	table   string
	batches atomic.Int64
}

func (p *putItemInvoker) Invoke(ctx context.Context, _ string, _ []byte) (invoke.Result, error) {
	n := p.batches.Add(1)
	_, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(n)},
	}})
	if err != nil {
		return invoke.Result{}, err
	}
	return invoke.Result{Payload: []byte("null")}, nil
}

// countingHandler counts log records by message, keeping the first error
// of each.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	key := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" {
			key += ": " + a.Value.String()
			return false
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[key]++
	return nil
}

func (h *countingHandler) snapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.counts)
}

func (h *countingHandler) count(prefix string) int {
	n := 0
	for k, v := range h.snapshot() {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}
