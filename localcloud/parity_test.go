package localcloud_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	sfnsdk "github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
	"github.com/clubdev/club/localcloud/issuer"
)

// The parity suite runs the local cloud's own small template
// (testdata/parity) once for the whole test binary and checks, from the
// outside, each AWS behaviour the Club backend relies on. docs/local-cloud.md
// names the test behind every row.

var env struct {
	cloud *localcloud.Cloud
	stack *stackfile.Stack
	cfg   aws.Config
	db    *dynamodb.Client
	sqs   *sqs.Client
	dir   string
	// problems keeps the stack's warnings, printed when a test fails.
	problems *localcloud.ProblemLog
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	env.problems = localcloud.NewProblemLog(200)
	dir, err := os.MkdirTemp("", "club-parity-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.dir = dir
	root := moduleRoot()
	// The build may take minutes on a cold cache; the start after it is
	// bounded by the local cloud's ReadyTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cloud, err := localcloud.Start(ctx, localcloud.Config{
		ModuleRoot:    root,
		TemplatePath:  filepath.Join(root, "localcloud/testdata/parity/template.yaml"),
		StateDir:      dir,
		EndpointAddr:  freeAddr(),
		APIAddr:       freeAddr(),
		NoSandboxes:   true,
		ScheduleSpeed: 60, // rate(1 minute) fires every second
		Logger:        slog.New(slog.NewTextHandler(env.problems, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local cloud:", err)
		return 1
	}
	defer cloud.Close()
	env.cloud = cloud
	env.stack, err = stackfile.Load(cloud.StackFile())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.cfg = localcloud.AWSConfig(env.stack.Endpoint)
	env.db = dynamodb.NewFromConfig(env.cfg)
	env.sqs = sqs.NewFromConfig(env.cfg)
	code := m.Run()
	if code != 0 {
		env.problems.Dump(os.Stderr)
	}
	return code
}

func moduleRoot() string {
	dir, err := os.Getwd() // a test runs in its package's directory
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "..")
}

// freeAddr is an address for a server of the stack (see package freeport).
func freeAddr() string { return freeport.MustAddr() }

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	// A wait ends as soon as its condition holds, so a generous floor costs
	// a passing run nothing, while a loaded two-core CI machine can be many
	// times slower than the deadline a test was written with.
	within = patience.Within(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seen returns the Seen table's rows whose pk starts with prefix.
func seen(t testing.TB, prefix string) []map[string]string {
	t.Helper()
	out, err := env.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(env.stack.Tables["SeenTable"])})
	require.NoError(t, err)
	var rows []map[string]string
	for _, item := range out.Items {
		row := map[string]string{}
		for k, v := range item {
			switch v := v.(type) {
			case *ddbtypes.AttributeValueMemberS:
				row[k] = v.Value
			case *ddbtypes.AttributeValueMemberN:
				row[k] = v.Value
			}
		}
		if strings.HasPrefix(row["pk"], prefix) {
			rows = append(rows, row)
		}
	}
	return rows
}

func queueMessages(t *testing.T, queue string) []sqstypes.Message {
	t.Helper()
	out, err := env.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(env.stack.Queues[queue]), MaxNumberOfMessages: 10, VisibilityTimeout: 0,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Messages
}

func send(t *testing.T, bodies ...string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, b := range bodies {
		out, err := env.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(env.stack.Queues["WorkQueue"]), MessageBody: aws.String(b),
		})
		require.NoError(t, err)
		ids[b] = *out.MessageId
	}
	return ids
}

// item is a SourceTable item. Its kind is "normal" unless attrs say otherwise:
// the stream mapping's filter passes every kind but "ignored" (and, as on
// AWS, anything-but does not match a missing attribute).
func item(id string, attrs map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	m := map[string]ddbtypes.AttributeValue{
		"id":   &ddbtypes.AttributeValueMemberS{Value: id},
		"kind": &ddbtypes.AttributeValueMemberS{Value: "normal"},
	}
	for k, v := range attrs {
		m[k] = v
	}
	return m
}

func TestTransactWriteItemsYieldsStreamRecordsInCommitOrder(t *testing.T) {
	ctx := context.Background()
	table := env.stack.Tables["SourceTable"]
	streamARN := env.stack.Outputs["SourceStreamArn"]
	streams := dynamodbstreams.NewFromConfig(env.cfg)

	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
	require.NoError(t, err)
	shard := desc.StreamDescription.Shards[0].ShardId
	before, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(streamARN), ShardId: shard, ShardIteratorType: streamtypes.ShardIteratorTypeLatest,
	})
	require.NoError(t, err)

	_, err = env.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("tx-1", nil)}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("tx-2", nil)}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("tx-3", nil)}},
	}})
	require.NoError(t, err)

	recs, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: before.ShardIterator})
	require.NoError(t, err)
	var ids []string
	for _, r := range recs.Records {
		require.Equal(t, streamtypes.OperationTypeInsert, r.EventName)
		ids = append(ids, r.Dynamodb.Keys["id"].(*streamtypes.AttributeValueMemberS).Value)
	}
	require.Equal(t, []string{"tx-1", "tx-2", "tx-3"}, ids, "one record per item, in commit order")

	// And the stream mapping delivered them to the function.
	eventually(t, 10*time.Second, "stream worker saw the transaction", func() bool {
		return len(seen(t, "stream#tx-")) == 3
	})
}

func TestStreamMappingBisectsAndSendsPoisonMetadataToOnFailure(t *testing.T) {
	ctx := context.Background()
	table := env.stack.Tables["SourceTable"]
	poison := map[string]ddbtypes.AttributeValue{"poison": &ddbtypes.AttributeValueMemberBOOL{Value: true}}
	// One transaction: the four records arrive as one batch (BatchSize 4).
	_, err := env.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("bis-a", nil)}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("bis-b", nil)}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("bis-poison", poison)}},
		{Put: &ddbtypes.Put{TableName: aws.String(table), Item: item("bis-c", nil)}},
	}})
	require.NoError(t, err)

	var failure struct {
		RequestContext struct {
			Condition string `json:"condition"`
		} `json:"requestContext"`
		DDBStreamBatchInfo struct {
			BatchSize           int    `json:"batchSize"`
			StartSequenceNumber string `json:"startSequenceNumber"`
			EndSequenceNumber   string `json:"endSequenceNumber"`
			StreamArn           string `json:"streamArn"`
		} `json:"DDBStreamBatchInfo"`
	}
	eventually(t, 20*time.Second, "on-failure record for the poison record", func() bool {
		for _, m := range queueMessages(t, "StreamFailures") {
			require.NoError(t, json.Unmarshal([]byte(*m.Body), &failure))
			return true
		}
		return false
	})
	require.Equal(t, "RetryAttemptsExhausted", failure.RequestContext.Condition)
	require.Equal(t, 1, failure.DDBStreamBatchInfo.BatchSize, "bisection isolates the poison record")
	require.Equal(t, failure.DDBStreamBatchInfo.StartSequenceNumber, failure.DDBStreamBatchInfo.EndSequenceNumber)
	require.Equal(t, env.stack.Outputs["SourceStreamArn"], failure.DDBStreamBatchInfo.StreamArn)

	// The good records around it were all delivered.
	eventually(t, 10*time.Second, "good records delivered", func() bool {
		return len(seen(t, "stream#bis-")) == 3
	})
	var got []string
	for _, r := range seen(t, "stream#bis-") {
		got = append(got, r["pk"])
	}
	sort.Strings(got)
	require.Equal(t, []string{"stream#bis-a", "stream#bis-b", "stream#bis-c"}, got)
}

func TestStreamFilterCriteriaDropNonMatchingRecords(t *testing.T) {
	ctx := context.Background()
	table := env.stack.Tables["SourceTable"]
	kind := func(k string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"kind": &ddbtypes.AttributeValueMemberS{Value: k}}
	}
	for _, it := range []map[string]ddbtypes.AttributeValue{
		item("flt-ignored", kind("ignored")), item("flt-kept", kind("kept")),
	} {
		_, err := env.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, "matching record delivered", func() bool {
		return len(seen(t, "stream#flt-kept")) == 1
	})
	// The ignored record was written first, so the mapping has passed it.
	require.Empty(t, seen(t, "stream#flt-ignored"), "a record that matches no filter never reaches the function")
}

func TestSQSMappingPartialBatchFailuresAndDLQ(t *testing.T) {
	ids := send(t, "ok-1", "fail:partial", "ok-2")

	eventually(t, 10*time.Second, "successes processed", func() bool {
		return len(seen(t, "done#"+ids["ok-1"])) == 1 && len(seen(t, "done#"+ids["ok-2"])) == 1
	})
	// The failed message comes back after each visibility timeout (2 s) and
	// is moved to the DLQ after maxReceiveCount (3) receives.
	var dlq []sqstypes.Message
	eventually(t, 30*time.Second, "failed message in the DLQ", func() bool {
		dlq = append(dlq, queueMessages(t, "WorkDLQ")...)
		for _, m := range dlq {
			if *m.MessageId == ids["fail:partial"] {
				return true
			}
		}
		return false
	})
	deliveries := seen(t, "delivery#"+ids["fail:partial"])
	require.Len(t, deliveries, 3, "delivered exactly maxReceiveCount times")
	// Successes were deleted, not redelivered: one row each, receive count 1.
	for _, body := range []string{"ok-1", "ok-2"} {
		rows := seen(t, "done#"+ids[body])
		require.Len(t, rows, 1)
		require.Equal(t, "1", rows[0]["sk"])
	}
}

func TestSQSMappingNeverExceedsMaximumConcurrency(t *testing.T) {
	const n = 12
	// Each message keeps the worker busy for 300 ms.
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, send(t, "slow:300")["slow:300"])
	}
	type span struct{ start, end int64 }
	var spans []span
	eventually(t, 30*time.Second, "all slow messages processed", func() bool {
		spans = spans[:0]
		for _, id := range ids {
			rows := seen(t, "done#"+id)
			if len(rows) != 1 {
				return false
			}
			s, _ := strconv.ParseInt(rows[0]["start"], 10, 64)
			e, _ := strconv.ParseInt(rows[0]["end"], 10, 64)
			spans = append(spans, span{s, e})
		}
		return true
	})
	// Batches run one message after another inside an invocation, so
	// overlapping spans mean concurrent invocations.
	maxOverlap := 0
	for _, a := range spans {
		overlap := 0
		for _, b := range spans {
			if b.start <= a.start && a.start < b.end {
				overlap++
			}
		}
		maxOverlap = max(maxOverlap, overlap)
	}
	require.LessOrEqual(t, maxOverlap, 2, "ScalingConfig.MaximumConcurrency is 2")
	require.GreaterOrEqual(t, maxOverlap, 1)
}

func TestCrashedFunctionIsRestartedAndItsInvocationFails(t *testing.T) {
	ids := send(t, "crash")
	// The crashing message fails every time, so it ends in the DLQ...
	eventually(t, 30*time.Second, "crashing message in the DLQ", func() bool {
		for _, m := range queueMessages(t, "WorkDLQ") {
			if *m.MessageId == ids["crash"] {
				return true
			}
		}
		return false
	})
	// ...and the function was restarted each time: new work still runs.
	after := send(t, "after-crash")
	eventually(t, 10*time.Second, "work after the crash processed", func() bool {
		return len(seen(t, "done#"+after["after-crash"])) == 1
	})
	st := env.cloud.Stats().Functions[env.stack.Functions["SqsWorker"]]
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var stats struct{ Crashes, Restarts uint64 }
	require.NoError(t, json.Unmarshal(b, &stats))
	require.GreaterOrEqual(t, stats.Crashes, uint64(3), "one crash per delivery")
	require.GreaterOrEqual(t, stats.Restarts, stats.Crashes)
}

func TestScheduleFires(t *testing.T) {
	eventually(t, 10*time.Second, "the rate(1 minute) schedule fired (at 60x speed)", func() bool {
		return len(seen(t, "tick")) >= 2
	})
	for _, r := range seen(t, "tick") {
		require.Equal(t, "Scheduled Event", r["detail"])
		require.Equal(t, "aws.events", r["source"])
	}
}

func TestGatewayJWTAuthorizer(t *testing.T) {
	key, err := issuer.LoadKey(filepath.Join(env.dir, "issuer-key.pem"))
	require.NoError(t, err)
	iss, err := issuer.New(env.stack.IssuerURL, key)
	require.NoError(t, err)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	forger, err := issuer.New(env.stack.IssuerURL, otherKey)
	require.NoError(t, err)
	// A forger who knows the key id: only the signature is wrong.
	forger.KeyID = iss.KeyID

	claims := issuer.Claims{Subject: "student-7", Audience: env.stack.JWTAudience, Email: "s7@example.com", Groups: []string{"student"}}
	sign := func(i *issuer.Issuer, c issuer.Claims, ttl time.Duration) string {
		tok, err := i.Sign(c, ttl)
		require.NoError(t, err)
		return tok
	}
	good := sign(iss, claims, time.Hour)
	expired := sign(iss, issuer.Claims{Subject: "s", Audience: env.stack.JWTAudience, IssuedAt: time.Now().Add(-2 * time.Hour)}, time.Hour)
	wrongSig := sign(forger, claims, time.Hour)
	wrongAud := sign(iss, issuer.Claims{Subject: "s", Audience: "someone-else"}, time.Hour)

	call := func(token string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, env.stack.APIURL+"/echo/ada?x=1", strings.NewReader(`{"a":1}`))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	for name, tok := range map[string]string{"missing": "", "expired": expired, "wrong signature": wrongSig, "wrong audience": wrongAud} {
		status, _ := call(tok)
		require.Equal(t, http.StatusUnauthorized, status, name)
	}
	status, body := call(good)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "POST /echo/{name}", body["route_key"])
	require.Equal(t, map[string]any{"name": "ada"}, body["path_parameters"])
	claimsGot := body["claims"].(map[string]any)
	require.Equal(t, "student-7", claimsGot["sub"])
	require.Equal(t, "s7@example.com", claimsGot["email"])
	require.Equal(t, "[student]", claimsGot["cognito:groups"])

	// A route with Auth: NONE needs no token.
	resp, err := http.Get(env.stack.APIURL + "/open")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestHealthz(t *testing.T) {
	resp, err := http.Get(env.stack.APIURL + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// Bad input to the local cloud itself stops it with a message naming the
// cause, before anything runs: no port stays claimed, no process starts.
func TestBadInputStopsStartWithAClearMessage(t *testing.T) {
	root := moduleRoot()
	broken := filepath.Join(root, "localcloud/testdata/broken")
	tests := []struct {
		name     string
		template string
		endpoint string
		want     []string
	}{
		{"unsupported resource type", filepath.Join(broken, "unsupported-type.yaml"), "", []string{"Box", "AWS::EC2::Instance"}},
		{"unsupported property", filepath.Join(broken, "unsupported-property.yaml"), "", []string{"Jobs", "ThroughputBoost"}},
		{"function does not build", filepath.Join(broken, "template.yaml"), "", []string{"Broken", "not a number"}},
		{"busy port", filepath.Join(broken, "template.yaml"), strings.TrimPrefix(env.stack.Endpoint, "http://"), []string{"cannot listen on " + strings.TrimPrefix(env.stack.Endpoint, "http://")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := tt.endpoint
			if endpoint == "" {
				endpoint = freeAddr()
			}
			api := freeAddr()
			_, err := localcloud.Start(context.Background(), localcloud.Config{
				ModuleRoot: root, TemplatePath: tt.template, StateDir: t.TempDir(),
				EndpointAddr: endpoint, APIAddr: api, NoSandboxes: true,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			// Nothing half-started: the API port is free again.
			ln, err := net.Listen("tcp", api)
			require.NoError(t, err, "the HTTP API port must be released")
			ln.Close()
		})
	}
}

// A stage that fails late — the HTTP API's issuer cannot read its key, after
// the engine, the endpoint, the functions' processes and the mappings have
// started — undoes everything before it: every port it claimed is free
// again at once.
func TestALateStageFailureUndoesTheEarlierStages(t *testing.T) {
	root := moduleRoot()
	state := t.TempDir()
	// A directory where the issuer's key file should be.
	require.NoError(t, os.MkdirAll(filepath.Join(state, "issuer-key.pem", "not-a-key"), 0o755))
	addrs := map[string]string{"endpoint": freeAddr(), "api": freeAddr(), "mail": freeAddr(), "payment": freeAddr()}
	_, err := localcloud.Start(context.Background(), localcloud.Config{
		ModuleRoot: root, TemplatePath: filepath.Join(root, "localcloud/testdata/parity/template.yaml"), StateDir: state,
		EndpointAddr: addrs["endpoint"], APIAddr: addrs["api"], MailAddr: addrs["mail"], PaymentAddr: addrs["payment"],
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.ErrorContains(t, err, "local issuer")
	for name, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "the %s port must be released", name)
		ln.Close()
	}
}

func TestStepFunctionsCatchesANamedLambdaError(t *testing.T) {
	ctx := context.Background()
	client := sfnsdk.NewFromConfig(env.cfg)
	run := func(input string) (string, []sfntypes.HistoryEventType) {
		out, err := client.StartExecution(ctx, &sfnsdk.StartExecutionInput{
			StateMachineArn: aws.String(env.stack.Outputs["HoldMachineArn"]), Input: aws.String(input),
		})
		require.NoError(t, err)
		var desc *sfnsdk.DescribeExecutionOutput
		eventually(t, 10*time.Second, "execution finished", func() bool {
			desc, err = client.DescribeExecution(ctx, &sfnsdk.DescribeExecutionInput{ExecutionArn: out.ExecutionArn})
			require.NoError(t, err)
			return desc.Status != sfntypes.ExecutionStatusRunning
		})
		require.Equal(t, sfntypes.ExecutionStatusSucceeded, desc.Status)
		hist, err := client.GetExecutionHistory(ctx, &sfnsdk.GetExecutionHistoryInput{ExecutionArn: out.ExecutionArn})
		require.NoError(t, err)
		var types []sfntypes.HistoryEventType
		for _, e := range hist.Events {
			types = append(types, e.Type)
		}
		return aws.ToString(desc.Output), types
	}

	out, hist := run(`{"seat":"A1"}`)
	require.JSONEq(t, `{"seat":"A1","result":{"held":"A1"}}`, out)
	require.Contains(t, hist, sfntypes.HistoryEventTypeTaskSucceeded)

	out, hist = run(`{"seat":"B2","fail":true}`)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "taken", got["outcome"], "caught by the Go error type's name")
	require.Contains(t, got["cause"], "seat B2 is taken")
	require.Contains(t, hist, sfntypes.HistoryEventTypeTaskFailed)
	require.Contains(t, hist, sfntypes.HistoryEventTypePassStateEntered)
}

// TestStorageEndpointListsWhatEachTableStores: GET /_club/storage on the
// endpoint answers, per table, its items and their bytes as DynamoDB bills
// storage (size plus 100 bytes an item), whatever the billing meter is
// doing.
func TestStorageEndpointListsWhatEachTableStores(t *testing.T) {
	ctx := context.Background()
	_, err := env.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("storage-probe"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	for _, pk := range []string{"a", "bb", "ccc"} { // "pk" + the value, "v" + 4: 8, 9 and 10 bytes
		_, err := env.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("storage-probe"), Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "v": &ddbtypes.AttributeValueMemberS{Value: "four"},
		}})
		require.NoError(t, err)
	}

	resp, err := http.Get(env.stack.Endpoint + "/_club/storage")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Tables []struct {
			Table string `json:"table"`
			Items int64  `json:"items"`
			Bytes int64  `json:"bytes"`
		} `json:"tables"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	found := map[string]int64{}
	for _, tb := range out.Tables {
		found[tb.Table] = tb.Items
		if tb.Table == "storage-probe" {
			require.EqualValues(t, 3, tb.Items)
			require.EqualValues(t, 8+9+10+3*100, tb.Bytes)
		}
	}
	require.Contains(t, found, "storage-probe")
	require.Contains(t, found, env.stack.Tables["SeenTable"], "the template's tables are listed too")
}
