package front

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	sig := func(svc string) string {
		return "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/" + svc + "/aws4_request, SignedHeaders=host, Signature=abc"
	}
	tests := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    string
		want    Op
	}{
		{"dynamodb json", "POST", "/", map[string]string{"X-Amz-Target": "DynamoDB_20120810.TransactWriteItems"}, "{}", Op{"dynamodb", "TransactWriteItems"}},
		{"streams json", "POST", "/", map[string]string{"X-Amz-Target": "DynamoDBStreams_20120810.GetRecords"}, "{}", Op{"dynamodbstreams", "GetRecords"}},
		{"sqs json", "POST", "/", map[string]string{"X-Amz-Target": "AmazonSQS.ReceiveMessage"}, "{}", Op{"sqs", "ReceiveMessage"}},
		{"step functions", "POST", "/", map[string]string{"X-Amz-Target": "AWSStepFunctions.StartExecution"}, "{}", Op{"states", "StartExecution"}},
		{"sns query", "POST", "/", map[string]string{"Authorization": sig("sns"), "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}, "Action=Publish&Version=2010-03-31", Op{"sns", "Publish"}},
		{"lambda invoke", "POST", "/2015-03-31/functions/club-api/invocations", map[string]string{"Authorization": sig("lambda")}, "{}", Op{"lambda", "Invoke"}},
		{"s3 get", "GET", "/bucket/key.csv", map[string]string{"Authorization": sig("s3")}, "", Op{"s3", "GetObject"}},
		{"s3 presigned get", "GET", "/bucket/key.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=local%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=abc", nil, "", Op{"s3", "GetObject"}},
		{"unsigned rest", "GET", "/things/1", nil, "", Op{"unknown", "GET /things"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			require.Equal(t, tt.want, classify(r))
			// A Query-protocol body read for classification is still there.
			rest, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			require.Equal(t, tt.body, string(rest))
		})
	}
}

func TestFrontRoutesAndCounts(t *testing.T) {
	t.Parallel()
	hit := func(name string, seen *[]string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			*seen = append(*seen, name)
			_, _ = io.WriteString(w, name)
		})
	}
	var seen []string
	kumo := httptest.NewServer(hit("kumo", &seen))
	defer kumo.Close()
	counter := NewCounter()
	f, err := New(kumo.URL, Routes{
		Runtime:  hit("runtime", &seen),
		Invoke:   hit("invoke", &seen),
		DynamoDB: hit("dynamodb", &seen),
		Streams:  hit("streams", &seen),
		Control:  hit("control", &seen),
	}, counter)
	require.NoError(t, err)

	send := func(method, path, target string) string {
		r := httptest.NewRequest(method, path, strings.NewReader("{}"))
		if target != "" {
			r.Header.Set("X-Amz-Target", target)
		}
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		return w.Body.String()
	}
	require.Equal(t, "runtime", send("GET", "/_runtime/fn/1/2018-06-01/runtime/invocation/next", ""))
	require.Equal(t, "invoke", send("POST", "/2015-03-31/functions/fn/invocations", ""))
	require.Equal(t, "dynamodb", send("POST", "/", "DynamoDB_20120810.PutItem"))
	require.Equal(t, "streams", send("POST", "/", "DynamoDBStreams_20120810.GetRecords"))
	require.Equal(t, "kumo", send("POST", "/", "AmazonSQS.SendMessage"))
	// No Step Functions handler configured: kumo answers.
	require.Equal(t, "kumo", send("POST", "/", "AWSStepFunctions.ListStateMachines"))
	require.Equal(t, "control", send("GET", "/_club/requests", ""))

	// Runtime API and control calls are not AWS requests and are not counted.
	got := map[Op]int64{}
	for _, c := range counter.Snapshot() {
		got[c.Op] = c.Count
	}
	require.Equal(t, map[Op]int64{
		{"lambda", "Invoke"}:              1,
		{"dynamodb", "PutItem"}:           1,
		{"dynamodbstreams", "GetRecords"}: 1,
		{"sqs", "SendMessage"}:            1,
		{"states", "ListStateMachines"}:   1,
	}, got)
}

func TestInProcessEngineAnswers502OnAPanic(t *testing.T) {
	t.Parallel()
	f, err := New("http://127.0.0.1:1", Routes{}, NewCounter(), WithEngineHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "AmazonSQS.ListQueues" {
			panic("engine bug")
		}
		_, _ = io.WriteString(w, `{"QueueUrl":"q"}`)
	})))
	require.NoError(t, err)
	call := func(target string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.Header.Set("X-Amz-Target", target)
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		return w
	}
	ok := call("AmazonSQS.GetQueueUrl")
	require.Equal(t, http.StatusOK, ok.Code, "the engine's handler answers, in this process")
	require.Equal(t, `{"QueueUrl":"q"}`, ok.Body.String())
	require.Equal(t, http.StatusBadGateway, call("AmazonSQS.ListQueues").Code)
}
