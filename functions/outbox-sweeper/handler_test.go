package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store/memstore"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// scheduled is the event EventBridge (and the local cloud's scheduler) sends.
var scheduled = lambdaevents.EventBridgeEvent{
	Version: "0", ID: "fire-1", DetailType: "Scheduled Event", Source: "aws.events",
	Time: t0, Region: "us-east-1", Detail: json.RawMessage(`{}`),
}

type recordingSweeper struct{ owners []string }

func (s *recordingSweeper) Sweep(_ context.Context, owner string) (relay.SweepResult, error) {
	s.owners = append(s.owners, owner)
	return relay.SweepResult{Owner: owner}, nil
}

func TestHandleOwnsTheLeaseAsTheInvocation(t *testing.T) {
	t.Parallel()
	s := &recordingSweeper{}
	h := newHandler(s)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-42"})
	res, err := h.Handle(ctx, scheduled)
	require.NoError(t, err)
	require.Equal(t, "req-42", res.Owner)

	// Outside Lambda (no request id) every run gets a fresh owner.
	_, err = h.Handle(context.Background(), scheduled)
	require.NoError(t, err)
	_, err = h.Handle(context.Background(), scheduled)
	require.NoError(t, err)
	require.Len(t, s.owners, 3)
	require.NotEmpty(t, s.owners[1])
	require.NotEqual(t, s.owners[1], s.owners[2])
}

// topic is a fake events topic.
type topic struct {
	mu  sync.Mutex
	ids []string
}

func (p *topic) Publish(_ context.Context, msgs []relay.Message) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.ids = append(p.ids, m.EventID)
	}
	return len(msgs), nil
}

func TestHandleRepublishesStaleRows(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	ctx := context.Background()
	c, err := class.New(events.NewID(), "teacher-1", "Go", 10, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))
	now := t0
	clock := func() time.Time { return now }
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency, Now: clock,
	})
	require.NoError(t, err)
	for i := range 3 {
		student := fmt.Sprintf("student-%d", i)
		fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, student)
		require.NoError(t, err)
		_, err = svc.Enroll(ctx, enrollment.EnrollRequest{
			ClassID: c.ID(), StudentID: student, IdempotencyKey: fmt.Sprintf("key-%08d", i), RequestFingerprint: fp,
			Respond: func(enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201}, nil
			},
		})
		require.NoError(t, err)
		now = now.Add(time.Minute)
	}
	// Rows at t0, t0+1m, t0+2m; the sweep runs at t0+3m with SWEEP_AFTER 90s.
	var logs bytes.Buffer
	logger := obs.NewLogger(&logs, obs.Options{Function: functionName})
	pub := &topic{}
	r, err := relay.New(relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: st.Outbox, Logger: logger, Now: clock})
	require.NoError(t, err)
	var metrics bytes.Buffer
	s, err := relay.NewSweeper(relay.SweeperConfig{
		Relay: r, Outbox: st.Outbox, Leases: st.Leases, SweepAfter: 90 * time.Second,
		Logger: logger, Metrics: &metrics, MetricDimensions: map[string]string{obs.DimFunction: functionName}, Now: clock,
	})
	require.NoError(t, err)
	h := newHandler(s)

	res, err := h.Handle(lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1"}), scheduled)
	require.NoError(t, err)
	require.Equal(t, 2, res.Republished)
	require.Equal(t, 3*time.Minute, res.OldestUnpublishedAge)
	require.Len(t, pub.ids, 2)
	pending, err := st.Outbox.Unpublished(ctx, now.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, pending, 1, "the young row is left to the stream relay")

	require.Equal(t, 2, strings.Count(logs.String(), "republished stale outbox row"))
	require.Contains(t, logs.String(), `"request_id":"req-1"`)
	require.Contains(t, logs.String(), `"oldest_unpublished_age_seconds":180`)
	require.Contains(t, metrics.String(), `"OutboxOldestUnpublishedAge":180000`)
	require.Contains(t, metrics.String(), `"Function":"outbox-sweeper"`)
}
