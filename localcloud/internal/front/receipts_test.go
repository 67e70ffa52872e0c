package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/esm"
	"github.com/clubdev/club/localcloud/invoke"
)

var _ esm.ReceiveReleaser = (*Front)(nil)

// receiptsEnv is a front on kumo with a queue whose visibility timeout (ten
// minutes) is far longer than any wait of these tests: a message seen again
// within them was released, not timed out.
type receiptsEnv struct {
	front    *Front
	url      string
	sqs      *sqs.Client
	queueURL string
	queueARN string
}

func newReceiptsEnv(t *testing.T) *receiptsEnv {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	f, err := New(k.URL, Routes{}, NewCounter())
	require.NoError(t, err)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	e := &receiptsEnv{front: f, url: srv.URL, sqs: sqs.NewFromConfig(sdkConfig(srv.URL, "test", "test"))}
	name := uniqueName("lost-receive")
	q, err := e.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{
		QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "600"},
	})
	require.NoError(t, err)
	e.queueURL, e.queueARN = *q.QueueUrl, "arn:aws:sqs:us-east-1:000000000000:"+name
	return e
}

// cutAnswers is the poller's transport: it lets the first `cuts`
// ReceiveMessage answers reach the client's status line and then fails the
// body read as a connection closed under it does — the lost answer seen in
// the local cloud ("use of closed network connection" after status 200).
type cutAnswers struct {
	next http.RoundTripper
	cuts atomic.Int64
}

func (c *cutAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(r)
	if err != nil || r.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" || c.cuts.Add(-1) < 0 {
		return res, err
	}
	res.Body.Close()
	res.Body = io.NopCloser(errReader{&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}})
	return res, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// deliveries records what the poller hands the function.
type deliveries struct {
	mu   sync.Mutex
	recs []events.SQSMessage
}

func (d *deliveries) Invoke(_ context.Context, _ string, payload []byte) (invoke.Result, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return invoke.Result{}, err
	}
	d.mu.Lock()
	d.recs = append(d.recs, ev.Records...)
	d.mu.Unlock()
	return invoke.Result{Payload: []byte("null")}, nil
}

func (d *deliveries) snapshot() []events.SQSMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]events.SQSMessage(nil), d.recs...)
}

// A receive whose answer is lost after the queue handed its messages out
// must not hide them for the visibility timeout: the poller tells the
// endpoint, which makes them visible again, and the next receive delivers
// them.
func TestLostReceiveAnswerIsReleasedAtOnce(t *testing.T) {
	t.Parallel()
	e := newReceiptsEnv(t)
	sent, err := e.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queueURL), MessageBody: aws.String("owed")})
	require.NoError(t, err)

	cut := &cutAnswers{next: http.DefaultTransport}
	cut.cuts.Store(1)
	pollerSQS := sqs.NewFromConfig(sdkConfig(e.url, "test", "test"), func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: cut}
	})
	fn := &deliveries{}
	p, err := esm.NewSQSPoller(esm.SQSMapping{
		UUID: "lost-receive", FunctionName: "worker", QueueURL: e.queueURL, QueueARN: e.queueARN, Enabled: true,
	}, pollerSQS, fn, slog.New(slog.NewTextHandler(io.Discard, nil)), esm.WithReceiveReleaser(ReceiveTokenHeader, e.front))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	deadline := time.Now().Add(time.Minute) // the visibility timeout is ten
	for len(fn.snapshot()) == 0 {
		require.True(t, time.Now().Before(deadline), "the message of the lost answer was not delivered; poller stats %+v", p.Stats())
		time.Sleep(20 * time.Millisecond)
	}
	got := fn.snapshot()
	require.Len(t, got, 1)
	require.Equal(t, aws.ToString(sent.MessageId), got[0].MessageId)
	require.Equal(t, "2", got[0].Attributes["ApproximateReceiveCount"], "the lost receive counted, as on SQS")
	st := p.Stats()
	require.EqualValues(t, 1, st.LostReceives)
	require.EqualValues(t, 1, st.Released)
	// The front records an answer once it has written it, so the client can
	// deliver the message before the second record is counted: wait for it.
	require.Eventually(t, func() bool { return e.front.ReceiptStats().Recorded >= 2 }, time.Minute, 10*time.Millisecond,
		"the lost answer and the one that delivered are recorded; front stats %+v", e.front.ReceiptStats())
	fs := e.front.ReceiptStats()
	require.Equal(t, int64(1), fs.Released)
	require.Equal(t, int64(1), fs.ReleasedMessages)
}

// failingWriter is a client connection that is gone: every write fails.
type failingWriter struct{ header http.Header }

func (w *failingWriter) Header() http.Header       { return w.header }
func (w *failingWriter) WriteHeader(int)           {}
func (w *failingWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// An answer the front cannot write is released without waiting to be
// asked: its caller cannot have the handles.
func TestUnwritableReceiveAnswerIsReleased(t *testing.T) {
	t.Parallel()
	e := newReceiptsEnv(t)
	_, err := e.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(e.queueURL), MessageBody: aws.String("owed")})
	require.NoError(t, err)

	// A signed ReceiveMessage as the SDK sends it, served to a dead writer.
	var captured *http.Request
	var body []byte
	capture := sqs.NewFromConfig(sdkConfig(e.url, "test", "test"), func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			captured = r
			body, _ = io.ReadAll(r.Body)
			return nil, errors.New("captured")
		})}
		o.RetryMaxAttempts = 1
	})
	_, _ = capture.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10})
	require.NotNil(t, captured)
	req := httptest.NewRequest(http.MethodPost, e.url+"/", bytes.NewReader(body))
	req.Header = captured.Header.Clone()
	req.Header.Set(ReceiveTokenHeader, "dead-writer")
	e.front.ServeHTTP(&failingWriter{header: http.Header{}}, req)

	require.Equal(t, int64(1), e.front.ReceiptStats().WriteFailures)
	require.Equal(t, int64(1), e.front.ReceiptStats().ReleasedMessages)
	out, err := e.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1, "visible again, ten minutes before its visibility timeout")
	require.Equal(t, "owed", aws.ToString(out.Messages[0].Body))
	// Asking again releases nothing: the record is gone.
	n, err := e.front.ReleaseReceive(t.Context(), "dead-writer")
	require.NoError(t, err)
	require.Zero(t, n)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
