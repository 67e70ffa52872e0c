package ddbstream_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go/logging"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/internal/ddbstream"
)

// kumoURL is the emulator every test shares. Its services are process-wide
// singletons, so each test works on tables of its own.
var kumoURL *url.URL

func TestMain(m *testing.M) {
	srv := kumo.NewServer()
	u, err := url.Parse(srv.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse kumo URL:", err)
		os.Exit(1)
	}
	kumoURL = u
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// env is one local DynamoDB + Streams front over the shared emulator, with
// SDK clients pointed at it.
type env struct {
	log      *ddbstream.Log
	url      string
	ddb      *dynamodb.Client
	streams  *dynamodbstreams.Client
	sdkLog   *logBuffer
	recorder *ddbstream.Recorder
}

// setup starts a front that routes like the local cloud's: Streams to the
// API, DynamoDB to the recorder, which forwards to kumo.
func setup(tb testing.TB, opts ...ddbstream.Option) *env {
	tb.Helper()
	log := ddbstream.NewLog()
	proxy := httputil.NewSingleHostReverseProxy(kumoURL)
	proxy.FlushInterval = -1 // as the local cloud's front configures it
	rec := ddbstream.NewRecorder(log, proxy, opts...)
	api := ddbstream.NewAPI(log, opts...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		switch {
		case strings.HasPrefix(target, "DynamoDBStreams_20120810."):
			api.ServeHTTP(w, r)
		case strings.HasPrefix(target, "DynamoDB_20120810."):
			rec.ServeHTTP(w, r)
		default:
			http.Error(w, "unexpected request "+target, http.StatusBadRequest)
		}
	}))
	tb.Cleanup(srv.Close)
	e := &env{log: log, url: srv.URL, sdkLog: &logBuffer{}, recorder: rec}
	cfg := sdkConfig(srv.URL, e.sdkLog)
	e.ddb = dynamodb.NewFromConfig(cfg)
	e.streams = dynamodbstreams.NewFromConfig(cfg)
	return e
}

func sdkConfig(endpoint string, logs *logBuffer) aws.Config {
	return aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(endpoint),
		Logger:           logs,
		RetryMaxAttempts: 1, // a test sees each answer as it is
	}
}

// logBuffer collects what the SDK logs.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

var _ logging.Logger = (*logBuffer)(nil)

func (b *logBuffer) Logf(c logging.Classification, format string, v ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, string(c)+" "+fmt.Sprintf(format, v...))
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

var tableSeq atomic.Int64

// tableName returns a table name no other test uses.
func tableName(tb testing.TB) string {
	clean := regexp.MustCompile(`[^a-zA-Z0-9_.-]+`).ReplaceAllString(tb.Name(), "-")
	return fmt.Sprintf("%s-%d", clean, tableSeq.Add(1))
}

// createTable creates a table keyed by pk (string) and, if withSort, sk
// (number), with a stream of the given view type ("" for none). It returns
// the table name and its stream ARN.
func (e *env) createTable(tb testing.TB, viewType string, withSort bool) (name, streamARN string) {
	tb.Helper()
	name = tableName(tb)
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		KeySchema:   []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
	}
	if withSort {
		in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange})
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			ddbtypes.AttributeDefinition{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeN})
	}
	if viewType != "" {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(viewType)}
	}
	out, err := e.ddb.CreateTable(ctx(tb), in)
	require.NoError(tb, err)
	return name, aws.ToString(out.TableDescription.LatestStreamArn)
}

func ctx(tb testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), patience.Wait())
	tb.Cleanup(cancel)
	return c
}

// readStream reads a stream from the given position to its current end
// through the SDK.
func (e *env) readStream(tb testing.TB, streamARN string, it streamtypes.ShardIteratorType, seq string) []streamtypes.Record {
	tb.Helper()
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(streamARN),
		ShardId:           aws.String(ddbstream.ShardID),
		ShardIteratorType: it,
	}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	got, err := e.streams.GetShardIterator(ctx(tb), in)
	require.NoError(tb, err)
	return e.readFrom(tb, got.ShardIterator)
}

// readFrom follows iterators until a GetRecords returns nothing.
func (e *env) readFrom(tb testing.TB, iterator *string) []streamtypes.Record {
	tb.Helper()
	var all []streamtypes.Record
	for iterator != nil {
		out, err := e.streams.GetRecords(ctx(tb), &dynamodbstreams.GetRecordsInput{ShardIterator: iterator})
		require.NoError(tb, err)
		all = append(all, out.Records...)
		if len(out.Records) == 0 {
			break
		}
		iterator = out.NextShardIterator
	}
	return all
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }

// fromStream converts a Streams attribute value to the DynamoDB one, so that
// what was written can be compared with what the stream carries.
func fromStream(av streamtypes.AttributeValue) ddbtypes.AttributeValue {
	switch v := av.(type) {
	case *streamtypes.AttributeValueMemberS:
		return &ddbtypes.AttributeValueMemberS{Value: v.Value}
	case *streamtypes.AttributeValueMemberN:
		return &ddbtypes.AttributeValueMemberN{Value: v.Value}
	case *streamtypes.AttributeValueMemberB:
		return &ddbtypes.AttributeValueMemberB{Value: v.Value}
	case *streamtypes.AttributeValueMemberBOOL:
		return &ddbtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *streamtypes.AttributeValueMemberNULL:
		return &ddbtypes.AttributeValueMemberNULL{Value: v.Value}
	case *streamtypes.AttributeValueMemberSS:
		return &ddbtypes.AttributeValueMemberSS{Value: v.Value}
	case *streamtypes.AttributeValueMemberNS:
		return &ddbtypes.AttributeValueMemberNS{Value: v.Value}
	case *streamtypes.AttributeValueMemberBS:
		return &ddbtypes.AttributeValueMemberBS{Value: v.Value}
	case *streamtypes.AttributeValueMemberL:
		out := make([]ddbtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = fromStream(e)
		}
		return &ddbtypes.AttributeValueMemberL{Value: out}
	case *streamtypes.AttributeValueMemberM:
		return &ddbtypes.AttributeValueMemberM{Value: fromStreamItem(v.Value)}
	}
	panic(fmt.Sprintf("unexpected attribute value %T", av))
}

func fromStreamItem(item map[string]streamtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for k, v := range item {
		out[k] = fromStream(v)
	}
	return out
}

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
