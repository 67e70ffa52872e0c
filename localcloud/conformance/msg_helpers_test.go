package conformance_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/front"
	"github.com/clubdev/club/localcloud/sfn"
	sfnapi "github.com/clubdev/club/localcloud/sfn/api"
	"github.com/clubdev/club/localcloud/testkit"
)

// The messaging cases (SQS, SNS) follow what the local cloud's endpoint
// answers: the front before the engine. msgConfig uses the suite's endpoint
// when the front is already in it, and otherwise (a bare engine) puts one
// before it in this process, so that each case checks what `make run`
// serves. The front is recognised by what neither engine does: it refuses
// a message of 1 MiB + 1 byte with InvalidParameterValue (kumo accepts it,
// moto cannot read it and answers NonExistentQueue).

var (
	frontsMu sync.Mutex
	fronts   = map[string]string{} // engine endpoint → front endpoint before it
)

// msgConfig is awsConfig pointed at the local cloud's front on the engine
// under test.
func msgConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg := awsConfig(t)
	cfg.BaseEndpoint = aws.String(msgEndpoint(t))
	return cfg
}

// msgEndpoint is the URL of the front on the engine under test.
func msgEndpoint(t *testing.T) string {
	t.Helper()
	base := testkit.URL()
	frontsMu.Lock()
	defer frontsMu.Unlock()
	if u, ok := fronts[base]; ok {
		return u
	}
	if hasFront(t) {
		fronts[base] = base
		return base
	}
	var opts []front.Option
	if testkit.Engine() == engine.Moto {
		opts = append(opts, front.WithMotoEngine())
	}
	f, err := front.New(base, front.Routes{}, front.NewCounter(), opts...)
	require.NoError(t, err)
	// Lives as long as the test binary, like the engine behind it.
	srv := httptest.NewServer(f)
	fronts[base] = srv.URL
	return srv.URL
}

// hasFront says whether the suite's endpoint refuses an oversized message
// as SQS (and the local cloud's front) does.
func hasFront(t *testing.T) bool {
	t.Helper()
	ctx := context.Background()
	c := sqs.NewFromConfig(awsConfig(t))
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("conformance-front-probe")})
	require.NoError(t, err)
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(strings.Repeat("x", 1<<20+1))})
	_, _ = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidParameterValue"
}

var (
	sfnOnce sync.Once
	sfnURL  string
)

// sfnConfig is an SDK configuration for the local cloud's own Step
// Functions executor, which serves AWSStepFunctions.* on either engine.
func sfnConfig(t *testing.T) aws.Config {
	t.Helper()
	sfnOnce.Do(func() {
		// Lives as long as the test binary.
		sfnURL = httptest.NewServer(sfnapi.NewHandler(sfn.New(sfn.Options{Resources: sfn.NewResources()}))).URL
	})
	cfg := awsConfig(t)
	cfg.BaseEndpoint = aws.String(sfnURL)
	return cfg
}
