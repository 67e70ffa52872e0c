package sdkhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sdkhttp"
)

// waitFor bounds every wait of these tests (internal/patience); none is
// expected to take more than milliseconds.
var waitFor = patience.Wait()

// race puts the events that lose an answer in the order that loses it,
// every time, instead of waiting for a loaded machine to do so:
//
//  1. the client sends a SendMessageBatch of about 6 KB: the transport puts
//     the body on the socket, then makes its last check that the body has
//     ended, which the spy below holds back;
//  2. the server reads the whole request and answers 200 with the first
//     bytes of its body, then holds the rest;
//  3. the SDK gets the response and closes the request body (smithy-go's
//     ClientHandler does so before the body is read); a middleware placed
//     just inside the SDK's deserializer sees that and lets the spy go on;
//  4. the transport's last check meets the closed body; if the write loop
//     takes that as a failed write it closes the connection, which the
//     middleware waits to see (httptrace's WroteRequest says the write's
//     result first);
//  5. the server sends the rest of its answer and the SDK reads it.
type race struct {
	smithyClosed chan struct{} // 3: the SDK closed the request body
	released     chan struct{} // 5: the server may send the rest
	wrote        chan error    // 4: the transport's result of writing the request
	connClosed   chan struct{} // 4: the client closed its connection
	closeOnce    sync.Once
	holdFailed   atomic.Value // a wait that ran out, as an error
}

func newRace() *race {
	return &race{smithyClosed: make(chan struct{}), released: make(chan struct{}),
		wrote: make(chan error, 1), connClosed: make(chan struct{})}
}

func (r *race) wait(ch <-chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(waitFor):
		r.holdFailed.Store(fmt.Errorf("waited %s for %s", waitFor, what))
	}
}

// server answers a SendMessageBatch in two parts (step 2 and 5).
func (r *race) server(t *testing.T) *httptest.Server {
	answer := `{"Successful":[{"Id":"0","MessageId":"m-0","MD5OfMessageBody":"x"}],"Failed":[]}` +
		strings.Repeat(" ", 8<<10) // JSON allows the padding; more than the client's read buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = io.WriteString(w, answer[:64])
		w.(http.Flusher).Flush()
		r.wait(r.released, "the client to be ready for the rest of the answer")
		_, _ = io.WriteString(w, answer[64:])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// transport is the client's transport: its connections say when they are
// closed, and every request body is watched by a spy.
func (r *race) transport() http.RoundTripper {
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, closed: func() { r.closeOnce.Do(func() { close(r.connClosed) }) }}, nil
	}}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Body != nil && req.Body != http.NoBody {
			req = req.Clone(req.Context())
			req.Body = r.spy(req.Body, req.ContentLength)
		}
		return base.RoundTrip(req)
	})
}

// spy passes a body through and holds back the transport's last check
// (any read or WriteTo once the declared length has been read) until the
// SDK has closed the body (step 1 → 3). It offers WriteTo only if the body
// it watches does, as the transport must see the body's own methods.
func (r *race) spy(body io.ReadCloser, length int64) io.ReadCloser {
	s := &spyBody{rc: body, left: length, hold: func() { r.wait(r.smithyClosed, "the SDK to close the request body") }}
	if _, ok := body.(io.WriterTo); ok {
		return spyWriterTo{s}
	}
	return s
}

type spyBody struct {
	rc   io.ReadCloser
	left int64
	hold func()
}

func (s *spyBody) Read(p []byte) (int, error) {
	if s.left <= 0 {
		s.hold()
	}
	n, err := s.rc.Read(p)
	s.left -= int64(n)
	return n, err
}

func (s *spyBody) Close() error { return s.rc.Close() }

type spyWriterTo struct{ *spyBody }

func (s spyWriterTo) WriteTo(w io.Writer) (int64, error) {
	if s.left <= 0 {
		s.hold()
	}
	return s.rc.(io.WriterTo).WriteTo(w)
}

type watchedConn struct {
	net.Conn
	closed func()
}

// Close says so once the connection is closed, not before: said first, the
// server could send the rest of its answer while the client still read it.
func (c *watchedConn) Close() error {
	err := c.Conn.Close()
	c.closed()
	return err
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// afterTransport is the middleware of step 3 and 4, just inside the SDK's
// deserializer: the transport has returned and the SDK has closed the
// request body; the answer's body is not read yet.
func (r *race) afterTransport() func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("forceTheRace",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				close(r.smithyClosed)
				select {
				case werr := <-r.wrote:
					if werr != nil {
						r.wait(r.connClosed, "the write loop to close the connection after its failed write")
					}
				case <-time.After(waitFor):
					r.holdFailed.Store(errors.New("the transport never said it wrote the request"))
				}
				close(r.released)
				return out, md, err
			}), middleware.After)
	}
}

// send runs one SendMessageBatch of about 6 KB through httpClient with the
// race forced, and returns its error.
func (r *race) send(t *testing.T, url string, httpClient aws.HTTPClient) error {
	client := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:       httpClient,
		RetryMaxAttempts: 1, // a retry would hide the lost answer (and send again)
		// The server's answer is made up; its checksums are not the point.
		DisableMessageChecksumValidation: true,
	}, func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, r.afterTransport()) })
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) { r.wrote <- info.Err },
	})
	entries := make([]sqstypes.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(strings.Repeat("m", 500))}
	}
	_, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url + "/000000000000/q"), Entries: entries})
	if held, _ := r.holdFailed.Load().(error); held != nil {
		t.Fatalf("the race was not forced: %v", held)
	}
	return err
}

// The SDK's answer is read whole through the mended client, although the
// SDK closed its request body before the transport was done with it.
func TestSDKAnswerSurvivesItsClosedRequestBody(t *testing.T) {
	r := newRace()
	srv := r.server(t)
	err := r.send(t, srv.URL, sdkhttp.Wrap(&http.Client{Transport: r.transport()}))
	require.NoError(t, err, "the answer the server gave reached the SDK")
	select {
	case <-r.connClosed:
		t.Fatal("the transport closed the connection of an answered call")
	default:
	}
}

// The defect itself, through the SDK's own HTTP client: the same order of
// events loses the answer. When this fails, the SDK or Go has fixed it (and
// the mend may go).
func TestPlainSDKClientLosesTheAnswer(t *testing.T) {
	r := newRace()
	srv := r.server(t)
	err := r.send(t, srv.URL, &http.Client{Transport: r.transport()})
	require.Error(t, err)
	require.ErrorIs(t, err, net.ErrClosed, "the answer is lost as seen in the field: %v", err)
	require.Contains(t, err.Error(), "StatusCode: 200", "the server answered")
}
