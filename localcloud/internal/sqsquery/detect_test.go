package sqsquery

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// seen is what the next handler received.
type seen struct {
	method, path, query string
	header              http.Header
	body                string
}

// recorder is a next handler that records the request and answers with a
// fixed status and body.
func recorder(status int, answer string, got *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		*got = seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: string(body)}
		w.Header().Set("X-Amzn-Requestid", "backend-req")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	})
}

func sigV4(service string) string {
	return "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/" + service +
		"/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=abc"
}

func TestPassesOtherRequestsThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, target string
		header               map[string]string
		body                 string
	}{
		{
			name: "JSON-protocol SQS", method: http.MethodPost, target: "/",
			header: map[string]string{
				"X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": jsonContentType, "Authorization": sigV4("sqs"),
			},
			body: `{"QueueUrl":"http://localhost:4566/000000000000/q","MessageBody":"hi"}`,
		},
		{
			name: "a Query call signed for SNS", method: http.MethodPost, target: "/",
			header: map[string]string{"Content-Type": formContentType + "; charset=utf-8", "Authorization": sigV4("sns")},
			body:   "Action=Publish&Version=2010-03-31&TopicArn=arn%3At&Message=hi",
		},
		{
			name: "an SNS call sent to a queue-like path", method: http.MethodPost, target: "/000000000000/q",
			header: map[string]string{"Content-Type": formContentType, "Authorization": sigV4("sns")},
			body:   "Action=ListTopics",
		},
		{
			name: "an unsigned Query call to the root", method: http.MethodPost, target: "/",
			header: map[string]string{"Content-Type": formContentType},
			body:   "Action=ListQueues&Version=2012-11-05",
		},
		{
			name: "an unsigned call to a queue path with a non-SQS action", method: http.MethodPost, target: "/000000000000/q",
			header: map[string]string{"Content-Type": formContentType},
			body:   "Action=Publish&Message=hi",
		},
		{
			name: "a signed SQS form without an Action", method: http.MethodPost, target: "/",
			header: map[string]string{"Content-Type": formContentType, "Authorization": sigV4("sqs")},
			body:   "Version=2012-11-05",
		},
		{
			name: "an unsigned form too large to inspect", method: http.MethodPost, target: "/000000000000/q",
			header: map[string]string{"Content-Type": formContentType},
			body:   "Action=SendMessage&MessageBody=" + strings.Repeat("a", maxFormBytes),
		},
		{
			name: "an S3 upload", method: http.MethodPut, target: "/bucket/key?x-id=PutObject",
			header: map[string]string{"Content-Type": "application/octet-stream", "Authorization": sigV4("s3")},
			body:   "Action=SendMessage",
		},
		{
			name: "a Lambda invoke", method: http.MethodPost, target: "/2015-03-31/functions/f/invocations",
			header: map[string]string{"Content-Type": "application/json", "Authorization": sigV4("lambda")},
			body:   `{"a":1}`,
		},
		{
			name: "a GET without a query", method: http.MethodGet, target: "/000000000000/q",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got seen
			h := New(recorder(http.StatusTeapot, "backend answer", &got))
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			want := req.Header.Clone()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			require.Equal(t, http.StatusTeapot, rec.Code)
			require.Equal(t, "backend answer", rec.Body.String())
			require.Equal(t, tt.method, got.method)
			require.Equal(t, req.URL.Path, got.path)
			require.Equal(t, req.URL.RawQuery, got.query)
			require.Equal(t, want, got.header)
			require.Equal(t, tt.body, got.body)
		})
	}
}

func TestTranslatesQueryCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, target string
		header               map[string]string
		body                 string
		wantTarget, wantJSON string
	}{
		{
			name: "a signed form to the root", method: http.MethodPost, target: "/",
			header:     map[string]string{"Content-Type": formContentType + "; charset=utf-8", "Authorization": sigV4("sqs")},
			body:       "Action=GetQueueUrl&Version=2012-11-05&QueueName=q",
			wantTarget: "AmazonSQS.GetQueueUrl", wantJSON: `{"QueueName":"q"}`,
		},
		{
			name: "an unsigned form to the queue URL takes the QueueUrl from the path", method: http.MethodPost,
			target:     "/000000000000/orders.fifo",
			header:     map[string]string{"Content-Type": formContentType},
			body:       "Action=SendMessage&MessageBody=hi&MessageGroupId=g",
			wantTarget: "AmazonSQS.SendMessage",
			wantJSON:   `{"QueueUrl":"http://sqs.test/000000000000/orders.fifo","MessageBody":"hi","MessageGroupId":"g"}`,
		},
		{
			name: "a QueueUrl in the form wins over the path", method: http.MethodPost, target: "/000000000000/a",
			header:     map[string]string{"Content-Type": formContentType, "Authorization": sigV4("sqs")},
			body:       "Action=PurgeQueue&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fb",
			wantTarget: "AmazonSQS.PurgeQueue", wantJSON: `{"QueueUrl":"http://h/000000000000/b"}`,
		},
		{
			name: "a GET with the parameters in the URL", method: http.MethodGet,
			target:     "/000000000000/q?Action=GetQueueAttributes&AttributeName.1=All",
			wantTarget: "AmazonSQS.GetQueueAttributes",
			wantJSON:   `{"QueueUrl":"http://sqs.test/000000000000/q","AttributeNames":["All"]}`,
		},
		{
			name: "a presigned GET", method: http.MethodGet,
			target:     "/?Action=ListQueues&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Signature=abc",
			wantTarget: "AmazonSQS.ListQueues", wantJSON: `{}`,
		},
		{
			name: "an Action in the URL of a form POST", method: http.MethodPost, target: "/?Action=DeleteQueue",
			header:     map[string]string{"Content-Type": formContentType, "Authorization": sigV4("sqs")},
			body:       "QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq",
			wantTarget: "AmazonSQS.DeleteQueue", wantJSON: `{"QueueUrl":"http://h/000000000000/q"}`,
		},
		{
			name: "an action this package does not know is still forwarded", method: http.MethodPost, target: "/",
			header:     map[string]string{"Content-Type": formContentType, "Authorization": sigV4("sqs")},
			body:       "Action=FutureAction&Name=n",
			wantTarget: "AmazonSQS.FutureAction", wantJSON: `{"Name":"n"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got seen
			h := New(recorder(http.StatusOK, `{}`, &got))
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			req.Host = "sqs.test"
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			require.Equal(t, http.MethodPost, got.method)
			require.Equal(t, "/", got.path)
			require.Empty(t, got.query)
			require.Equal(t, tt.wantTarget, got.header.Get("X-Amz-Target"))
			require.Equal(t, jsonContentType, got.header.Get("Content-Type"))
			require.JSONEq(t, tt.wantJSON, got.body)

			require.Equal(t, "text/xml", rec.Header().Get("Content-Type"))
			require.Equal(t, "backend-req", rec.Header().Get("X-Amzn-Requestid"))
			var doc struct {
				XMLName   xml.Name
				RequestID string `xml:"ResponseMetadata>RequestId"`
			}
			require.NoError(t, xml.Unmarshal(rec.Body.Bytes(), &doc))
			require.Equal(t, strings.TrimPrefix(tt.wantTarget, targetPrefix)+"Response", doc.XMLName.Local)
			require.Equal(t, "backend-req", doc.RequestID)
		})
	}
}

// queryErrorDoc is the Query-protocol error document.
type queryErrorDoc struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

func TestAnswersErrorsInXML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		body          string
		backendStatus int
		backendAnswer string
		wantStatus    int
		wantCode      string
		wantRequestID string
		wantForwarded bool
	}{
		{
			name: "the backend's error", body: "Action=GetQueueUrl&QueueName=nope",
			backendStatus: 400, backendAnswer: `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}`,
			wantStatus: 400, wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantRequestID: "backend-req", wantForwarded: true,
		},
		{
			name: "a success the backend wrote as something other than JSON", body: "Action=ListQueues",
			backendStatus: 200, backendAnswer: `<html/>`,
			wantStatus: 500, wantCode: "InternalFailure", wantRequestID: "backend-req", wantForwarded: true,
		},
		{
			name: "a parameter that cannot be translated is never forwarded", body: "Action=ReceiveMessage&WaitTimeSeconds=soon",
			wantStatus: 400, wantCode: "InvalidParameterValue",
		},
		{
			name: "a malformed form", body: "Action=ListQueues&%zz",
			wantStatus: 400, wantCode: "MalformedQueryString",
		},
		{
			name: "a form over the size limit", body: "Action=SendMessage&MessageBody=" + strings.Repeat("a", maxFormBytes),
			wantStatus: 413, wantCode: "RequestEntityTooLarge",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got seen
			h := New(recorder(tt.backendStatus, tt.backendAnswer, &got))
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", formContentType)
			req.Header.Set("Authorization", sigV4("sqs"))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			require.Equal(t, tt.wantStatus, rec.Code)
			require.Equal(t, "text/xml", rec.Header().Get("Content-Type"))
			var doc queryErrorDoc
			require.NoError(t, xml.Unmarshal(rec.Body.Bytes(), &doc), rec.Body.String())
			require.Equal(t, tt.wantCode, doc.Code)
			wantType := "Sender"
			if tt.wantStatus >= 500 {
				wantType = "Receiver"
			}
			require.Equal(t, wantType, doc.Type)
			require.NotEmpty(t, doc.Message)
			require.NotEmpty(t, doc.RequestID)
			require.Equal(t, doc.RequestID, rec.Header().Get("X-Amzn-Requestid"))
			if tt.wantRequestID != "" {
				require.Equal(t, tt.wantRequestID, doc.RequestID)
			}
			require.Equal(t, tt.wantForwarded, got.method != "")
		})
	}
}
