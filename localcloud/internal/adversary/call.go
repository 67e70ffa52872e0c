package adversary

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
)

// call is one AWS API call as the adversary sees it.
type call struct {
	r         *http.Request
	service   string // SigV4 service name: dynamodb, sqs, sns, states, lambda, …
	operation string
	protocol  protocol
	body      []byte
	// sdk is set when the caller is an AWS SDK or CLI (it names the call
	// with an invocation id), which retries a failed attempt.
	sdk bool
}

type protocol int

const (
	protoJSON protocol = iota
	protoQuery
	protoREST
)

var targetServices = map[string]string{
	"DynamoDB_20120810":        "dynamodb",
	"DynamoDBStreams_20120810": "dynamodbstreams",
	"AmazonSQS":                "sqs",
	"AWSStepFunctions":         "states",
}

var invokePath = regexp.MustCompile(`^/2015-03-31/functions/[^/]+/invocations$`)

// readCall reads the request's body (leaving it readable again) and names
// the call.
func readCall(r *http.Request) (*call, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := &call{r: r, body: body, sdk: r.Header.Get("Amz-Sdk-Invocation-Id") != ""}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, op, _ := strings.Cut(target, ".")
		c.service, c.operation, c.protocol = targetServices[prefix], op, protoJSON
		if c.service == "" {
			c.service = scopeService(r)
		}
		return c, nil
	}
	c.service = scopeService(r)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
			c.operation, c.protocol = form.Get("Action"), protoQuery
			return c, nil
		}
	}
	c.protocol = protoREST
	if c.service == "lambda" && r.Method == http.MethodPost && invokePath.MatchString(r.URL.Path) {
		c.operation = "Invoke"
	}
	return c, nil
}

// scopeService is the service in the SigV4 credential scope
// (Credential=KEY/DATE/REGION/SERVICE/aws4_request).
func scopeService(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

// answer is a whole answer, held before it is written.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (ans *answer) ok() bool { return ans.status/100 == 2 }

func (ans *answer) write(w http.ResponseWriter) {
	for k, v := range ans.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.Header().Del("X-Amz-Crc32") // the body may have changed
	w.WriteHeader(ans.status)
	_, _ = w.Write(ans.body)
}

// forward hands the call, with body, to next and holds its answer.
func forward(next http.Handler, r *http.Request, body []byte) *answer {
	in := r.Clone(r.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, in)
	return &answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// request builds a JSON-protocol call of the adversary's own (reads of an
// item's earlier version, a message made visible again) for the engine.
func request(r *http.Request, target string, body []byte) *http.Request {
	in, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "/", bytes.NewReader(body))
	in.Host = r.Host
	in.Header.Set("X-Amz-Target", target)
	in.Header.Set("Content-Type", "application/x-amz-json-1.0")
	in.Header.Set("Authorization", r.Header.Get("Authorization"))
	return in
}
