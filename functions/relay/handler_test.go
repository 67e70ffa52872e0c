package main

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store/memstore"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// topic is a fake events topic that fails chosen event ids once.
type topic struct {
	mu        sync.Mutex
	published []relay.Message
	failOnce  map[string]bool
}

func (p *topic) Publish(_ context.Context, msgs []relay.Message) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, m := range msgs {
		if p.failOnce[m.EventID] {
			delete(p.failOnce, m.EventID)
			return i, errors.New("sns: throttled")
		}
		p.published = append(p.published, m)
	}
	return len(msgs), nil
}

func (p *topic) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, len(p.published))
	for i, m := range p.published {
		ids[i] = m.EventID
	}
	return ids
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *memstore.Store
	topic *topic
	logs  *bytes.Buffer
	h     *Handler
	seq   int
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t: t, store: memstore.New(), topic: &topic{failOnce: map[string]bool{}}, logs: &bytes.Buffer{},
		ctx: lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"}),
	}
	logger := obs.NewLogger(f.logs, obs.Options{Function: functionName})
	r, err := relay.New(relay.Config{
		Routes: relay.Routes{events.KindEvent: f.topic}, Outbox: f.store.Outbox, Logger: logger,
	})
	require.NoError(t, err)
	f.h = &Handler{relay: r, logger: logger}
	return f
}

// rows enrolls n students and returns the pending outbox rows, oldest first.
func (f *fixture) rows(n int) []outbox.Row {
	f.t.Helper()
	c, err := class.New(events.NewID(), "teacher-1", "Go", 100, t0.Add(24*time.Hour))
	require.NoError(f.t, err)
	require.NoError(f.t, f.store.Classes.Create(f.ctx, c))
	now := t0
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: f.store.Enrollments, Classes: f.store.Classes, Idempotency: f.store.Idempotency,
		Now: func() time.Time { now = now.Add(time.Second); return now },
	})
	require.NoError(f.t, err)
	for i := range n {
		student := fmt.Sprintf("student-%d", i)
		fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, student)
		require.NoError(f.t, err)
		_, err = svc.Enroll(f.ctx, enrollment.EnrollRequest{
			ClassID: c.ID(), StudentID: student, IdempotencyKey: fmt.Sprintf("key-%08d", i), RequestFingerprint: fp,
			Respond: func(enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201}, nil
			},
		})
		require.NoError(f.t, err)
	}
	rows, err := f.store.Outbox.Unpublished(f.ctx, t0.Add(time.Hour), 100)
	require.NoError(f.t, err)
	require.Len(f.t, rows, n)
	return rows
}

// insert is the stream record the outbox table writes for a new row.
func (f *fixture) insert(r outbox.Row) lambdaevents.DynamoDBEventRecord {
	f.seq++
	s := lambdaevents.NewStringAttribute
	return lambdaevents.DynamoDBEventRecord{
		EventID: fmt.Sprintf("stream-%d", f.seq), EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: lambdaevents.DynamoDBStreamRecord{
			SequenceNumber: fmt.Sprintf("%021d", f.seq*100),
			Keys:           map[string]lambdaevents.DynamoDBAttributeValue{"event_id": s(r.EventID)},
			NewImage: map[string]lambdaevents.DynamoDBAttributeValue{
				"event_id": s(r.EventID), "type": s(string(r.Type)), "aggregate_id": s(r.AggregateID),
				"payload": s(string(r.Payload)), "created_at": s(r.CreatedAt.Format(time.RFC3339Nano)),
				"status": s(string(outbox.StatusPending)), "unpublished_shard": s("3"),
			},
			StreamViewType: "NEW_IMAGE",
		},
	}
}

func (f *fixture) record(name string) lambdaevents.DynamoDBEventRecord {
	f.seq++
	return lambdaevents.DynamoDBEventRecord{
		EventID: fmt.Sprintf("stream-%d", f.seq), EventName: name,
		Change: lambdaevents.DynamoDBStreamRecord{SequenceNumber: fmt.Sprintf("%021d", f.seq*100)},
	}
}

func (f *fixture) handle(recs ...lambdaevents.DynamoDBEventRecord) []string {
	f.t.Helper()
	resp, err := f.h.Handle(f.ctx, lambdaevents.DynamoDBEvent{Records: recs})
	require.NoError(f.t, err, "failures are reported per record, never as a function error")
	var seqs []string
	for _, fail := range resp.BatchItemFailures {
		seqs = append(seqs, fail.ItemIdentifier)
	}
	return seqs
}

func (f *fixture) pending() []string {
	f.t.Helper()
	rows, err := f.store.Outbox.Unpublished(f.ctx, t0.Add(time.Hour), 100)
	require.NoError(f.t, err)
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.EventID
	}
	return ids
}

func ids(rows []outbox.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.EventID
	}
	return out
}

func TestHandleRelaysInStreamOrder(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rows := f.rows(4)
	var recs []lambdaevents.DynamoDBEventRecord
	for _, r := range rows {
		recs = append(recs, f.insert(r))
	}
	require.Empty(t, f.handle(recs...))
	require.Equal(t, ids(rows), f.topic.ids())
	for i, m := range f.topic.published {
		require.Equal(t, rows[i].Payload, m.Body)
	}
	require.Empty(t, f.pending(), "every row is marked published")
}

func TestHandleStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rows := f.rows(4)
	recs := []lambdaevents.DynamoDBEventRecord{f.insert(rows[0]), f.insert(rows[1]), f.insert(rows[2]), f.insert(rows[3])}
	f.topic.failOnce[rows[1].EventID] = true

	require.Equal(t, []string{recs[1].Change.SequenceNumber}, f.handle(recs...), "the first failed record, only")
	require.Equal(t, ids(rows[:1]), f.topic.ids(), "nothing after it was published")
	require.Equal(t, ids(rows[1:]), f.pending())
	require.Contains(t, f.logs.String(), `"event_id":"`+rows[1].EventID+`"`)
	require.Contains(t, f.logs.String(), `"request_id":"req-1"`)

	// Lambda retries from the failed record; the publish now succeeds.
	require.Empty(t, f.handle(recs[1:]...))
	require.Equal(t, ids(rows), f.topic.ids(), "each row published once, in order")
	require.Empty(t, f.pending())

	// A replay of the whole batch (e.g. after a crash before the checkpoint)
	// publishes the same event ids again and changes no row.
	require.Empty(t, f.handle(recs...))
	require.Equal(t, append(ids(rows), ids(rows)...), f.topic.ids())
}

func TestHandleSkipsRecordsThatAreNotInserts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rows := f.rows(2)
	require.Empty(t, f.handle(f.insert(rows[0]), f.record("MODIFY"), f.record("REMOVE"), f.insert(rows[1])))
	require.Equal(t, ids(rows), f.topic.ids())
}

func TestHandleReportsAnUndecodableRecord(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rows := f.rows(3)
	bad := f.insert(rows[1])
	delete(bad.Change.NewImage, "payload")
	recs := []lambdaevents.DynamoDBEventRecord{f.insert(rows[0]), bad, f.insert(rows[2])}

	require.Equal(t, []string{bad.Change.SequenceNumber}, f.handle(recs...))
	require.Equal(t, ids(rows[:1]), f.topic.ids(), "the records before it are relayed, those after it wait")
	require.Contains(t, f.logs.String(), "missing payload")
}

func TestHandleNeverDropsAnUnroutableRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		row  func(t *testing.T) outbox.Row
		want string
	}{
		{"job", func(t *testing.T) outbox.Row {
			return newRow(t, events.ExportRequested{OperationID: "op-1", Kind: events.ExportKindRosterExport, ClassID: "c", RequestedBy: "t"})
		}, `no route for kind \"job\" (type export.requested)`},
		{"workflow", func(t *testing.T) outbox.Row {
			return newRow(t, events.PurchaseRequested{PurchaseID: "p-1", IntensiveID: "i", StudentID: "s", AmountCents: 100, Currency: "EUR", HoldExpiresAt: t0})
		}, `no route for kind \"workflow\" (type purchase.requested)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			evs := f.rows(2)
			row := tt.row(t)
			recs := []lambdaevents.DynamoDBEventRecord{f.insert(evs[0]), f.insert(row), f.insert(evs[1])}

			require.Equal(t, []string{recs[1].Change.SequenceNumber}, f.handle(recs...), "reported as a failure, not acknowledged")
			require.Equal(t, ids(evs[:1]), f.topic.ids())
			var line string
			for _, l := range strings.Split(f.logs.String(), "\n") {
				if strings.Contains(l, row.EventID) {
					line = l
				}
			}
			require.Contains(t, line, tt.want)
			require.Contains(t, line, `"level":"ERROR"`)
		})
	}
}

func newRow(t *testing.T, p events.Payload) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), t0, p)
	require.NoError(t, err)
	r, err := outbox.NewRow(env, t0)
	require.NoError(t, err)
	return r
}

func TestHandleEmptyBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.Empty(t, f.handle())
	require.Empty(t, f.topic.ids())
}
