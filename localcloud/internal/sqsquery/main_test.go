package sqsquery

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

// The emulator's services are process-wide singletons, so one emulator and
// one front serve every test of the binary; tests isolate themselves with
// unique queue names.
var (
	frontURL string
	// queryCalls and jsonCalls count the SQS requests that reached the front
	// in each protocol, so a test can tell which one a client speaks.
	queryCalls, jsonCalls atomic.Int64
	// cliHome is an empty directory the AWS CLI gets as HOME and config.
	cliHome string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	emulator := kumo.NewServer()
	defer emulator.Close()
	target, err := url.Parse(emulator.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	front := httptest.NewServer(countProtocols(New(proxy)))
	defer front.Close()
	frontURL = front.URL

	if cliHome, err = os.MkdirTemp("", "sqsquery-cli-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cliHome)
	return m.Run()
}

// countProtocols counts SQS calls by protocol on their way into the front.
func countProtocols(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case r.Header.Get("X-Amz-Target") != "":
			jsonCalls.Add(1)
		case mediaType == formContentType:
			queryCalls.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

var (
	queueSeq    atomic.Int64
	unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// uniqueName derives a queue name from the test name.
func uniqueName(t *testing.T) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return fmt.Sprintf("%s-%d", name, queueSeq.Add(1))
}

// newSDKClient is an aws-sdk-go-v2 SQS client (JSON protocol) of the front.
func newSDKClient() *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(frontURL),
		Credentials:  credentials.NewStaticCredentialsProvider("x", "x", ""),
	})
}

// createQueueSDK creates a queue through the JSON protocol and returns its URL.
func createQueueSDK(t *testing.T, attrs map[string]string) string {
	t.Helper()
	out, err := newSDKClient().CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(uniqueName(t)),
		Attributes: attrs,
	})
	require.NoError(t, err)
	return aws.ToString(out.QueueUrl)
}
