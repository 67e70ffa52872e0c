package front

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/clubdev/club/localcloud/internal/snsfix"
	"github.com/clubdev/club/localcloud/internal/sqsfix"
	"github.com/clubdev/club/localcloud/internal/sqsquery"
)

// Routes are the handlers the local cloud provides itself. A nil handler
// leaves that part of the API to kumo.
type Routes struct {
	// Runtime serves the Lambda Runtime API under /_runtime/.
	Runtime http.Handler
	// Invoke serves POST /2015-03-31/functions/{name}/invocations.
	Invoke http.Handler
	// DynamoDB receives every DynamoDB_20120810 call (the stream recorder,
	// which forwards to kumo itself).
	DynamoDB http.Handler
	// Services serve whole services (by SigV4 service name: "lambda" for
	// the Lambda API other than Invoke, "monitoring") that the engine should
	// not: with moto, kumo keeps the functions, mappings and CloudWatch.
	Services map[string]http.Handler
	// Streams serves DynamoDBStreams_20120810.
	Streams http.Handler
	// StepFunctions serves AWSStepFunctions.
	StepFunctions http.Handler
	// Control serves the local cloud's own endpoints under /_club/.
	Control http.Handler
	// Fallback, when set, receives what no other route claims (SQS among
	// it, the Query protocol already translated) and forwards it to kumo
	// itself: the queue age tracker (package sqsage).
	Fallback http.Handler
}

// Front is the endpoint's http.Handler.
type Front struct {
	routes Routes
	kumo   http.Handler
	// fallback serves what no route claims: kumo, behind a translation of
	// the SQS Query protocol that older CLIs speak and kumo does not.
	fallback http.Handler
	// sqsBackend serves SQS JSON-protocol calls: the engine (or the
	// Fallback route) behind SQS's corrections (package sqsfix).
	sqsBackend http.Handler
	sqsFixes   *sqsfix.Fixes
	// snsFixes serves every SNS call (package snsfix).
	snsFixes  *snsfix.Fixes
	counter   *Counter
	presign   presignVerifier
	receipts  *receipts
	deleted   *deletedHandles
	answers   *answers
	conflicts *conflicts
	// serialEngine: see WithMotoEngine; serial is then the engine's
	// handler.
	serialEngine bool
	serial       *SerialEngine
	// engine, when set, is the engine's handler in this process: calls
	// reach it without a connection (WithEngineHandler).
	engine http.Handler
	log    *slog.Logger
}

// Option configures a Front.
type Option func(*Front)

// WithCredentials gives the access keys the local cloud hands out, with
// their secret keys. Presigned URLs are verified against them; one signed
// with any other key is refused (InvalidAccessKeyId).
func WithCredentials(keys map[string]string) Option {
	return func(f *Front) {
		f.presign.keys = make(map[string]string, len(keys))
		for id, secret := range keys {
			f.presign.keys[id] = secret
		}
	}
}

// WithLogger sets where the front reports what it did about lost answers
// (default: nowhere).
func WithLogger(l *slog.Logger) Option {
	return func(f *Front) { f.answers.log, f.log = l, l }
}

// WithEngineHandler gives the engine's own http.Handler, running in this
// process: the front then calls it directly instead of proxying to the
// engine's URL, which saves a loopback connection, a second HTTP server and
// a copy of every answer on each call. A panic in it is answered 502, as
// the proxy answers an engine that failed. Not with WithMotoEngine.
func WithEngineHandler(h http.Handler) Option {
	return func(f *Front) { f.engine = h }
}

// WithClock sets the clock presigned URLs' validity is checked against
// (default time.Now), so tests can move past an expiry without waiting.
func WithClock(now func() time.Time) Option {
	return func(f *Front) { f.presign.now = now }
}

// WithMotoEngine says the engine behind the front is moto. It is not safe
// under concurrent requests, so every call reaches it through Serialised,
// the front's own calls included; and it refuses an unsigned read of a
// private S3 object as S3 does, so a presigned request the front has
// verified reaches it with its signature (moto does not check it).
func WithMotoEngine() Option {
	return func(f *Front) { f.serialEngine = true }
}

// motoMaxRequest is the largest request body moto 5.2 reads (measured: a
// SendMessage of 1,048,400 bytes of body is read, one of 1,048,500 is not).
const motoMaxRequest = 1 << 20

// New returns a front that proxies to the engine (kumo, or moto) at kumoURL.
func New(kumoURL string, routes Routes, counter *Counter, opts ...Option) (*Front, error) {
	u, err := url.Parse(kumoURL)
	if err != nil {
		return nil, err
	}
	f := &Front{routes: routes, counter: counter,
		presign: presignVerifier{now: time.Now, signer: v4.NewSigner()},
		deleted: newDeletedHandles(),
		answers: newAnswers(), log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(f)
	}
	var kumo http.Handler
	switch {
	case f.serialEngine:
		f.serial = Serialised(NewBufferedProxy(u))
		kumo = f.serial
	case f.engine != nil:
		kumo = inProcess{h: f.engine, log: f.log}
	default:
		kumo = NewProxy(u)
	}
	fixOpts := []sqsfix.Option{sqsfix.WithStaleCounts()} // kumo's
	if f.serialEngine {
		fixOpts = []sqsfix.Option{sqsfix.WithMaxRequest(motoMaxRequest)}
	}
	f.sqsFixes = sqsfix.New(fixOpts...)
	f.kumo, f.sqsBackend = kumo, f.sqsFixes.Wrap(kumo)
	f.fallback = sqsquery.New(f.sqsBackend)
	snsOpt := snsfix.WithKumoDelivery()
	if f.serialEngine {
		snsOpt = snsfix.WithMotoDelivery()
	}
	f.snsFixes = snsfix.New(http.HandlerFunc(f.routeSNS), snsOpt)
	// The front's own calls to the engine go the way clients' calls do.
	frontAWS := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("front", "front", ""),
		HTTPClient: &http.Client{Transport: handlerTransport{kumo}}}
	f.receipts, f.conflicts = newReceipts(kumoURL, frontAWS), newConflicts(kumoURL, frontAWS)
	return f, nil
}

// NewProxy returns a reverse proxy to kumo that streams responses as they
// come (long polls) and keeps the client's Host header, which kumo uses for
// virtual-host routing (S3 buckets, API Gateway).
func NewProxy(target *url.URL) *httputil.ReverseProxy {
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		FlushInterval: -1,
		// A client that gives up (a long poll cancelled at shutdown) is
		// normal; anything else is kumo failing and is reported as AWS
		// would report an unreachable service.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.Transport = &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	return p
}

// inProcess calls the engine's handler in this process. A panic in it
// (a dependency's bug) is answered 502 Bad Gateway, as the reverse proxy
// answers an engine that failed, instead of ending the client's connection
// or, for the front's own calls (handlerTransport), the process.
type inProcess struct {
	h   http.Handler
	log *slog.Logger
}

func (e inProcess) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			e.log.Error("the engine failed a call", "call", r.Header.Get("X-Amz-Target"), "path", r.URL.Path, "panic", v)
			w.WriteHeader(http.StatusBadGateway)
		}
	}()
	e.h.ServeHTTP(w, r)
}

// SetRoutes replaces the routes. Call it before serving: handlers such as the
// stream recorder need Kumo() to be built.
func (f *Front) SetRoutes(routes Routes) {
	f.routes = routes
	if routes.Fallback != nil {
		f.sqsBackend = f.sqsFixes.Wrap(routes.Fallback)
		f.fallback = sqsquery.New(f.sqsBackend)
	}
}

// EngineExclusive runs fn with the engine to itself (see
// SerialEngine.Exclusive) when the engine is serialised; otherwise it runs
// fn with the engine's handler at once, beside other requests.
func (f *Front) EngineExclusive(fn func(next http.Handler)) {
	if f.serial != nil {
		f.serial.Exclusive(fn)
		return
	}
	fn(f.kumo)
}

// NewTransport returns an http.RoundTripper that hands each request to h in
// this process: given the endpoint's handler (the Front, or what the
// endpoint serves in front of it), a request is counted, routed and
// answered as if it had arrived on the endpoint, without a connection. For
// the local cloud's own clients (the event source mappings' pollers); the
// answer is read whole before the caller sees it.
func NewTransport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

// Kumo returns the handler that forwards to kumo, for handlers (such as the
// stream recorder) that sit in front of it.
func (f *Front) Kumo() http.Handler { return f.kumo }

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/_runtime/"):
		f.serve(f.routes.Runtime, w, r)
		return
	case strings.HasPrefix(path, "/_club/"):
		f.serve(f.routes.Control, w, r)
		return
	}
	op := classify(r)
	f.counter.Add(op)
	if isPresigned(r) {
		// The engines do not check query-string signatures: the front
		// does, and kumo then sees a plain request (moto the signed one).
		if e := f.presign.verify(r); e != nil {
			e.write(w)
			return
		}
		if !f.serialEngine {
			r = withoutPresignParams(r)
		}
	}
	f.answers.serve(op, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.route(op, w, r) }), w, r)
}

// route hands a call to the part of the local cloud that answers it.
func (f *Front) route(op Op, w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case op.Service == "lambda" && op.Operation == "Invoke" && lambdaInvokeRE.MatchString(path):
		f.serve(f.routes.Invoke, w, r)
	case f.routes.Services[op.Service] != nil:
		f.routes.Services[op.Service].ServeHTTP(w, r)
	case op.Service == "dynamodb" && op.Operation == "TransactWriteItems":
		next := f.routes.DynamoDB
		if next == nil {
			next = f.kumo
		}
		f.conflicts.serve(next, w, r)
	case op.Service == "dynamodb":
		f.serve(f.routes.DynamoDB, w, r)
	case op.Service == "dynamodbstreams":
		f.serve(f.routes.Streams, w, r)
	case op.Service == "states":
		f.serve(f.routes.StepFunctions, w, r)
	case op.Service == "sns":
		f.snsFixes.ServeHTTP(w, r)
	case op.Service == "sqs" && (op.Operation == "DeleteMessageBatch" || op.Operation == "DeleteMessage") && r.Header.Get("X-Amz-Target") != "":
		f.deleted.serveDelete(f.sqsBackend, w, r, op.Operation == "DeleteMessageBatch")
	case op.Service == "sqs" && op.Operation == "ReceiveMessage" && r.Header.Get(ReceiveTokenHeader) != "":
		// Through the fallback route, so that the queue age tracker sees
		// the pollers' receives as it sees everyone else's.
		f.receipts.serve(f.sqsBackend, w, r, r.Header.Get(ReceiveTokenHeader))
	default:
		f.fallback.ServeHTTP(w, r)
	}
}

// routeSNS hands an SNS call, past its corrections, to the engine: PublishBatch,
// which kumo lacks, to the front's own.
func (f *Front) routeSNS(w http.ResponseWriter, r *http.Request) {
	if classify(r).Operation == "PublishBatch" {
		snsPublishBatch{kumo: f.kumo}.ServeHTTP(w, r)
		return
	}
	f.fallback.ServeHTTP(w, r)
}

// SNSFixStats says what the SNS corrections did (package snsfix).
func (f *Front) SNSFixStats() snsfix.Stats { return f.snsFixes.Stats() }

// ReleaseReceive makes the messages of the ReceiveMessage answer recorded
// under token (see ReceiveTokenHeader) visible again, and returns how many
// it released. A caller whose answer was lost asks at once: it waits for
// an answer still being written. An unknown or already released token
// releases nothing.
func (f *Front) ReleaseReceive(ctx context.Context, token string) (int, error) {
	return f.receipts.release(ctx, token)
}

// ReceiptStats says how many answers were recorded and released.
func (f *Front) ReceiptStats() ReceiptStats { return f.receipts.snapshot() }

// Conflicts serves the switch of DynamoDB transaction conflicts (GET, PUT
// {"enabled": true, "hold_ms": 20}, DELETE); see ConflictSettings.
func (f *Front) Conflicts() http.Handler { return f.conflicts }

// ConflictStats says whether transaction conflicts are on and how many
// transactions met one.
func (f *Front) ConflictStats() ConflictStats { return f.conflicts.snapshot() }

// SQSFixStats says what the SQS corrections did (package sqsfix).
func (f *Front) SQSFixStats() sqsfix.Stats { return f.sqsFixes.Stats() }

// RetryStats says how many answers were kept for SDK retries and how many
// retries were given one.
func (f *Front) RetryStats() RetryStats { return f.answers.snapshot() }

// serve uses h, or kumo when the local cloud does not provide h.
func (f *Front) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	if h == nil {
		h = f.kumo
	}
	h.ServeHTTP(w, r)
}
