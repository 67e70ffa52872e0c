package outage_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/notifier"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/store/memstore"
)

// The notifier's settings in infra/template.yaml.
const (
	instances        = 5                 // ScalingConfig.MaximumConcurrency
	batchSize        = 10                // BatchSize
	visibility       = 180 * time.Second // NotificationsQueue's VisibilityTimeout
	parkedVisibility = 60 * time.Second  // NotificationsParkingQueue's
	probeInterval    = 5 * time.Second   // NotificationProbeIntervalSeconds
	backoffCap       = 30 * time.Second  // NotificationRetryCapSeconds
	retryBudget      = 24 * time.Hour    // NotificationRetryBudgetSeconds
	providerRate     = 100.0             // the capacity model's provider, mails a second
)

const (
	mainURL    = "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications"
	dlqURL     = mainURL + "-dlq"
	parkingURL = mainURL + "-parking"
)

var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// Counts are the requests a run made, by what AWS bills.
type Counts struct {
	SQS, DynamoDBWrites, DynamoDBReads, Invocations int
	// ReadItems are the items the reads returned (a BatchGetItem is one
	// request and one eventually consistent read unit per item).
	ReadItems int
}

func (c Counts) minus(o Counts) Counts {
	return Counts{c.SQS - o.SQS, c.DynamoDBWrites - o.DynamoDBWrites, c.DynamoDBReads - o.DynamoDBReads, c.Invocations - o.Invocations, c.ReadItems - o.ReadItems}
}

// Total is every request.
func (c Counts) Total() int { return c.SQS + c.DynamoDBWrites + c.DynamoDBReads + c.Invocations }

// Dollars prices the requests at bench.ListPrices (us-east-1): SQS per
// request, DynamoDB on-demand per write unit and per read unit (half a
// unit an item, eventually consistent), Lambda per invocation. Lambda's
// duration is left out: a batch of refused or parked mail takes
// milliseconds.
func (c Counts) Dollars() float64 {
	p := bench.ListPrices
	return (float64(c.SQS)*p.SQSRequest + float64(c.DynamoDBWrites)*p.DynamoDBWriteUnit +
		float64(c.ReadItems)/2*p.DynamoDBReadUnit + float64(c.Invocations)*p.LambdaInvocation) / 1e6
}

// message is one message of a modelled queue.
type message struct {
	id, body    string
	attrs       map[string]types.MessageAttributeValue
	sentAt      time.Time
	visibleAt   time.Time
	receives    int
	handle      string
	visibleTime time.Duration // the queue's visibility timeout
}

// cloud models the notifier's three queues and counts requests. It
// implements sqsconsumer.ParkingSQS.
type cloud struct {
	mu     sync.Mutex
	clk    *clock.Fake
	queues map[string][]*message
	seq    int
	counts Counts
}

var _ sqsconsumer.ParkingSQS = (*cloud)(nil)

func (c *cloud) add(url, body string, attrs map[string]types.MessageAttributeValue, delay time.Duration) string {
	c.seq++
	id := "m-" + strconv.Itoa(c.seq)
	vis := visibility
	if url == parkingURL {
		vis = parkedVisibility
	}
	now := c.clk.Now()
	c.queues[url] = append(c.queues[url], &message{id: id, body: body, attrs: attrs, sentAt: now, visibleAt: now.Add(delay), visibleTime: vis})
	return id
}

func (c *cloud) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	id := c.add(aws.ToString(in.QueueUrl), aws.ToString(in.MessageBody), in.MessageAttributes, time.Duration(in.DelaySeconds)*time.Second)
	return &sqs.SendMessageOutput{MessageId: aws.String(id)}, nil
}

func (c *cloud) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		id := c.add(aws.ToString(in.QueueUrl), aws.ToString(e.MessageBody), e.MessageAttributes, time.Duration(e.DelaySeconds)*time.Second)
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id, MessageId: aws.String(id)})
	}
	return out, nil
}

func (c *cloud) find(url, handle string) int {
	return slices.IndexFunc(c.queues[url], func(m *message) bool { return m.handle == handle })
}

func (c *cloud) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	if i := c.find(aws.ToString(in.QueueUrl), aws.ToString(in.ReceiptHandle)); i >= 0 {
		c.queues[aws.ToString(in.QueueUrl)][i].visibleAt = c.clk.Now().Add(time.Duration(in.VisibilityTimeout) * time.Second)
	}
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func (c *cloud) DeleteMessageBatch(_ context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		c.delete(aws.ToString(in.QueueUrl), aws.ToString(e.ReceiptHandle))
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (c *cloud) delete(url, handle string) {
	if i := c.find(url, handle); i >= 0 {
		c.queues[url] = slices.Delete(c.queues[url], i, i+1)
	}
}

// receive takes up to n visible messages of a queue, as ReceiveMessage,
// invisible for the queue's visibility timeout, or vis if it is set.
func (c *cloud) receive(url string, n int, vis time.Duration) []*message {
	now := c.clk.Now()
	var got []*message
	for _, m := range c.queues[url] {
		if len(got) == n {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		c.seq++
		m.receives++
		m.handle = "h-" + strconv.Itoa(c.seq)
		m.visibleAt = now.Add(cmp.Or(vis, m.visibleTime))
		got = append(got, m)
	}
	return got
}

func (c *cloud) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	out := &sqs.ReceiveMessageOutput{}
	vis := time.Duration(in.VisibilityTimeout) * time.Second
	for _, m := range c.receive(aws.ToString(in.QueueUrl), int(max(in.MaxNumberOfMessages, 1)), vis) {
		out.Messages = append(out.Messages, types.Message{MessageId: aws.String(m.id), Body: aws.String(m.body), ReceiptHandle: aws.String(m.handle), MessageAttributes: m.attrs})
	}
	return out, nil
}

// GetQueueAttributes answers ApproximateNumberOfMessagesNotVisible, the
// one attribute the notifier asks of its parking queue.
func (c *cloud) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.SQS++
	now, held := c.clk.Now(), 0
	for _, m := range c.queues[aws.ToString(in.QueueUrl)] {
		if m.receives > 0 && m.visibleAt.After(now) {
			held++
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{
		string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible): strconv.Itoa(held),
	}}, nil
}

// poll is the event source mapping's receive for one invocation: a batch
// of the queue's visible messages, as the Lambda event carries them (one
// ReceiveMessage; its empty long polls cost the same whatever the backlog
// and are left out).
func (c *cloud) poll() []lambdaevents.SQSMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := c.receive(mainURL, batchSize, 0)
	if len(msgs) == 0 {
		return nil
	}
	c.counts.SQS++
	var recs []lambdaevents.SQSMessage
	for _, m := range msgs {
		r := lambdaevents.SQSMessage{
			MessageId: m.id, ReceiptHandle: m.handle, Body: m.body, EventSource: "aws:sqs",
			Attributes: map[string]string{
				"ApproximateReceiveCount": strconv.Itoa(m.receives),
				"SentTimestamp":           strconv.FormatInt(m.sentAt.UnixMilli(), 10),
			},
			MessageAttributes: map[string]lambdaevents.SQSMessageAttribute{},
		}
		for k, a := range m.attrs {
			r.MessageAttributes[k] = lambdaevents.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
		}
		recs = append(recs, r)
	}
	return recs
}

// settle is the event source mapping's DeleteMessageBatch of the messages
// the function did not report failed.
func (c *cloud) settle(recs []lambdaevents.SQSMessage, resp lambdaevents.SQSEventResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	deleted := false
	for _, r := range recs {
		if !failed[r.MessageId] {
			c.delete(mainURL, r.ReceiptHandle)
			deleted = true
		}
	}
	if deleted {
		c.counts.SQS++
	}
}

// nextVisible is when the next message of the queue becomes visible after
// now (zero if none will).
func (c *cloud) nextVisible(now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for _, m := range c.queues[mainURL] {
		if m.visibleAt.After(now) && (next.IsZero() || m.visibleAt.Before(next)) {
			next = m.visibleAt
		}
	}
	return next
}

func (c *cloud) depth(url string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queues[url])
}

func (c *cloud) snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

func (c *cloud) count(f func(*Counts)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.counts)
}

// countingStore counts the notifier's conditional writes.
type countingStore struct {
	enrollment.NotificationStore
	c *cloud
}

func (s countingStore) ChangeNotification(ctx context.Context, id string, ch enrollment.NotificationChange) (enrollment.Enrollment, error) {
	s.c.count(func(c *Counts) { c.DynamoDBWrites++ })
	return s.NotificationStore.ChangeNotification(ctx, id, ch)
}

// countingProfiles counts the address reads (one BatchGetItem a batch).
type countingProfiles struct {
	*memstore.Profiles
	c *cloud
}

func (p countingProfiles) Get(ctx context.Context, id string) (profile.Profile, error) {
	p.c.count(func(c *Counts) { c.DynamoDBReads++; c.ReadItems++ })
	return p.Profiles.Get(ctx, id)
}

func (p countingProfiles) GetMany(ctx context.Context, ids []string) (map[string]profile.Profile, error) {
	p.c.count(func(c *Counts) { c.DynamoDBReads++; c.ReadItems += len(ids) })
	return p.Profiles.GetMany(ctx, ids)
}

// provider records every call that reached the mail provider.
type provider struct {
	next  notifier.Mailer
	mu    sync.Mutex
	calls []call
}

type call struct {
	key string
	ok  bool
	at  time.Time // when it completes at the provider's rate (set by the world)
}

func (p *provider) Send(ctx context.Context, key string, m mail.Message) (mail.Receipt, error) {
	r, err := p.next.Send(ctx, key, m)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call{key: key, ok: err == nil})
	return r, err
}

// instance is one concurrent execution of the notifier.
type instance struct {
	handler   *notifier.Handler
	busyUntil time.Time
}

// world is the notifier, its store, the mail sandbox and the modelled
// queues on one virtual clock.
type world struct {
	clk          *clock.Fake
	cloud        *cloud
	sandbox      *mailsandbox.Server
	provider     *provider
	store        *memstore.Store
	instances    []*instance
	providerFree time.Time
	enrollments  map[string]string // idempotency key → enrollment id
	// rng orders the free instances for each round of polls: Lambda hands
	// a batch to any free instance, never the one whose breaker sent a
	// message back (seeded: a run repeats).
	rng *rand.Rand
}

// newWorld builds the notifier the new way (parked) or the old.
func newWorld(t testing.TB, parked bool, mails int, seed uint64) *world {
	t.Helper()
	clk := clock.NewFake(start)
	w := &world{clk: clk, cloud: &cloud{clk: clk, queues: map[string][]*message{}}, store: memstore.NewWithClock(clk.Now), enrollments: map[string]string{}, rng: rand.New(rand.NewPCG(seed, 2))}
	w.sandbox = mailsandbox.New(mailsandbox.Options{Clock: clk, RatePerSecond: 1e9, Seed: 1}) // the rate is modelled (invoke)
	hs := httptest.NewServer(w.sandbox)
	t.Cleanup(hs.Close)
	client, err := mail.New(mail.Config{BaseURL: hs.URL})
	require.NoError(t, err)
	w.provider = &provider{next: client}

	for i := range instances {
		breaker := &notifier.Breaker{Next: w.provider, ProbeInterval: probeInterval, Now: clk.Now}
		deps := notifier.NotifierDeps{
			Store:     countingStore{w.store.Enrollments, w.cloud},
			Addresses: notifier.Addresses{Policy: profile.PolicyCurrent, Profiles: countingProfiles{w.store.Profiles, w.cloud}},
			Mailer:    &notifier.PatientMailer{Next: breaker, Margin: 12 * time.Second},
			Now:       clk.Now,
			Logger:    discard,
		}
		queue := sqsconsumer.Config{
			QueueURL: mainURL, DLQURL: dlqURL, MaxReceiveCount: 8,
			RetryBudget: retryBudget, BackoffCap: backoffCap, Now: clk.Now, Metrics: nopWriter{},
		}
		if parked {
			deps.Breaker = breaker
			queue.ParkingURL = parkingURL
		}
		n, err := notifier.NewNotifier(deps)
		require.NoError(t, err)
		h, err := notifier.NewHandler(queue, w.cloud, n, discard)
		require.NoError(t, err, "instance %d", i)
		w.instances = append(w.instances, &instance{handler: h})
	}
	w.enroll(t, mails)
	return w
}

// enroll makes n enrollments and puts their enrollment.created events on
// the queue, as the relay would.
func (w *world) enroll(t testing.TB, n int) {
	t.Helper()
	ctx := context.Background()
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: w.store.Enrollments, Classes: w.store.Classes, Idempotency: w.store.Idempotency,
		Policy: profile.PolicyCurrent, Profiles: w.store.Profiles, Now: w.clk.Now,
	})
	require.NoError(t, err)
	var c class.Class
	for i := range n {
		if i%100 == 0 {
			c, err = class.New(events.NewID(), "teacher-1", "Go for beginners", 100, start.Add(30*24*time.Hour))
			require.NoError(t, err)
			require.NoError(t, w.store.Classes.Create(ctx, c))
		}
		student := fmt.Sprintf("student-%d", i)
		p, err := profile.New(student, student+"@example.com", "Student", start)
		require.NoError(t, err)
		require.NoError(t, w.store.Profiles.Put(ctx, p))
		path := "/classes/" + c.ID() + "/enrollments"
		fp, err := idempotency.Fingerprint("POST", path, nil, student)
		require.NoError(t, err)
		_, err = svc.Enroll(ctx, enrollment.EnrollRequest{
			ClassID: c.ID(), StudentID: student, TokenEmail: student + "@example.com",
			IdempotencyKey: "key-" + student, RequestFingerprint: fp,
			Respond: func(enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201, Body: []byte(`{}`)}, nil
			},
		})
		require.NoError(t, err)
	}
	rows, err := w.store.Outbox.Unpublished(ctx, start.Add(time.Hour), 10*n)
	require.NoError(t, err)
	for _, row := range rows {
		env, err := row.Envelope()
		require.NoError(t, err)
		if env.Type != events.TypeEnrollmentCreated {
			continue
		}
		w.enrollments[notifier.IdempotencyKey(env.EventID)] = env.AggregateID
		w.cloud.add(mainURL, string(row.Payload), map[string]types.MessageAttributeValue{
			"type":     {DataType: aws.String("String"), StringValue: aws.String(string(env.Type))},
			"event_id": {DataType: aws.String("String"), StringValue: aws.String(env.EventID)},
		}, 0)
	}
	require.Len(t, w.enrollments, n)
}

// invoke runs one batch on an instance. The instance is busy while its
// calls go out at the provider's rate, shared by all instances.
func (w *world) invoke(in *instance, recs []lambdaevents.SQSMessage) {
	w.cloud.count(func(c *Counts) { c.Invocations++ })
	w.provider.mu.Lock()
	before := len(w.provider.calls)
	w.provider.mu.Unlock()
	resp, _ := in.handler.Handle(context.Background(), lambdaevents.SQSEvent{Records: recs})
	w.cloud.settle(recs, resp)

	now := w.clk.Now()
	w.provider.mu.Lock()
	defer w.provider.mu.Unlock()
	if calls := w.provider.calls[before:]; len(calls) > 0 {
		at := now
		if w.providerFree.After(at) {
			at = w.providerFree
		}
		for i := range calls {
			at = at.Add(time.Duration(float64(time.Second) / providerRate))
			calls[i].at = at
		}
		w.providerFree, in.busyUntil = at, at
	}
}

// run runs the model until the clock reaches until or done holds.
func (w *world) run(until time.Time, done func() bool) {
	for {
		now := w.clk.Now()
		progressed := false
		for _, i := range w.rng.Perm(len(w.instances)) {
			in := w.instances[i]
			if in.busyUntil.After(now) {
				continue
			}
			recs := w.cloud.poll()
			if len(recs) == 0 {
				break
			}
			w.invoke(in, recs)
			progressed = true
		}
		if (done != nil && done()) || !now.Before(until) {
			return
		}
		if progressed {
			continue
		}
		next := w.cloud.nextVisible(now)
		for _, in := range w.instances {
			if in.busyUntil.After(now) && (next.IsZero() || in.busyUntil.Before(next)) {
				next = in.busyUntil
			}
		}
		if next.IsZero() || next.After(until) {
			next = until
		}
		w.clk.Advance(next.Sub(now))
	}
}

// sent reports, for each idempotency key, the provider's successful calls
// and the time of the last one.
func (w *world) sent() (perKey map[string]int, last time.Time) {
	w.provider.mu.Lock()
	defer w.provider.mu.Unlock()
	perKey = map[string]int{}
	for _, c := range w.provider.calls {
		if c.ok {
			perKey[c.key]++
			if c.at.After(last) {
				last = c.at
			}
		}
	}
	return perKey, last
}

// callsPerKey counts every call that reached the provider, by key.
func (w *world) callsPerKey() map[string]int {
	w.provider.mu.Lock()
	defer w.provider.mu.Unlock()
	n := map[string]int{}
	for _, c := range w.provider.calls {
		n[c.key]++
	}
	return n
}

// Result is one run of the model.
type Result struct {
	Way      string
	Mails    int
	Outage   time.Duration
	Warmup   Counts // requests in the outage's first minutes, before the window
	During   Counts // requests during the measured outage
	Provider int    // calls that reached the provider during it
	Drain    time.Duration
	Sent     int
	Dups     int // mails sent more than once
	Dead     int
	// AttemptsMatch: every enrollment's attempts equal the calls that
	// reached the provider with its key.
	AttemptsMatch bool
	Parked        int // messages in the parking queue at the end of the outage
}

// PerMailHour is the requests per pending mail per hour of outage.
func (r Result) PerMailHour() float64 {
	return float64(r.During.Total()) / float64(r.Mails) / r.Outage.Hours()
}

// DollarsPerMailHour prices them.
func (r Result) DollarsPerMailHour() float64 {
	return r.During.Dollars() / float64(r.Mails) / r.Outage.Hours()
}

// warmup is how long the outage runs before it is measured: every mail has
// been tried (and parked) by then.
const warmup = 2 * time.Minute

// simulate runs an outage of the given length with mails pending, then
// the recovery.
func simulate(t testing.TB, parked bool, mails int, outage time.Duration) Result {
	t.Helper()
	return simulateSeeded(t, parked, mails, outage, 1)
}

// simulateSeeded is simulate with the seed of the order in which free
// instances take batches.
func simulateSeeded(t testing.TB, parked bool, mails int, outage time.Duration, seed uint64) Result {
	t.Helper()
	w := newWorld(t, parked, mails, seed)
	require.NoError(t, w.sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultError, Rate: 1}, nil))
	w.run(start.Add(warmup), nil)
	before, callsBefore := w.cloud.snapshot(), len(w.provider.calls)
	w.run(start.Add(warmup+outage), nil)
	res := Result{Way: "old: back with the backoff", Mails: mails, Outage: outage, Warmup: before, During: w.cloud.snapshot().minus(before), Parked: w.cloud.depth(parkingURL)}
	if parked {
		res.Way = "new: parked, released by the probers"
	}
	res.Provider = len(w.provider.calls) - callsBefore
	perKey, _ := w.sent()
	require.Empty(t, perKey, "nothing was sent while the provider was down")

	recovered := w.clk.Now()
	require.NoError(t, w.sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultNone}, nil))
	w.run(recovered.Add(30*time.Minute), func() bool {
		perKey, _ := w.sent()
		return len(perKey) == mails
	})
	perKey, last := w.sent()
	res.Sent, res.Drain = len(perKey), last.Sub(recovered)
	for _, n := range perKey {
		res.Dups += max(n-1, 0)
	}
	res.Dups += int(w.sandbox.Stats().Duplicates)
	res.Dead = w.cloud.depth(dlqURL)

	calls := w.callsPerKey()
	res.AttemptsMatch = true
	for key, id := range w.enrollments {
		e, err := w.store.Enrollments.Get(context.Background(), id)
		require.NoError(t, err)
		if e.Notification().Attempts() != calls[key] {
			res.AttemptsMatch = false
		}
	}
	return res
}

// discard is a logger that writes nothing.
var discard = slogDiscard()

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
