package relay_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// fakeExecutions records starts and fails the names in failOn once.
type fakeExecutions struct {
	mu     sync.Mutex
	starts [][2]string // name, input
	failOn map[string]error
}

func (x *fakeExecutions) StartExecution(_ context.Context, name, input string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err, ok := x.failOn[name]; ok {
		delete(x.failOn, name)
		return err
	}
	x.starts = append(x.starts, [2]string{name, input})
	return nil
}

func (x *fakeExecutions) started() [][2]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([][2]string(nil), x.starts...)
}

// purchaseRow is the outbox row of a new purchase, as the purchase service
// writes it.
func purchaseRow(t *testing.T, purchaseID string, at time.Time) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.PurchaseRequested{
		PurchaseID: purchaseID, IntensiveID: "i-1", StudentID: "s-1", AmountCents: 1000, Currency: "EUR",
		HoldExpiresAt: at.Add(15 * time.Minute),
	})
	require.NoError(t, err)
	r, err := outbox.NewRow(env, at)
	require.NoError(t, err)
	return r
}

// recordingMarker records which rows were marked published.
type recordingMarker struct {
	mu     sync.Mutex
	marked map[string]bool
}

func (m *recordingMarker) MarkPublished(_ context.Context, eventID string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.marked == nil {
		m.marked = map[string]bool{}
	}
	m.marked[eventID] = true
	return nil
}

func (m *recordingMarker) isMarked(eventID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.marked[eventID]
}

func TestWorkflowStarterNamesTheExecutionAfterTheAggregate(t *testing.T) {
	t.Parallel()
	x := &fakeExecutions{}
	starter, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: x})
	require.NoError(t, err)
	rows := []outbox.Row{purchaseRow(t, "p-1", t0), purchaseRow(t, "p-2", t0)}
	msgs := []relay.Message{relay.MessageOf(rows[0]), relay.MessageOf(rows[1])}

	n, err := starter.Publish(context.Background(), msgs)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, [][2]string{
		{purchase.ExecutionName("p-1"), string(rows[0].Payload)},
		{purchase.ExecutionName("p-2"), string(rows[1].Payload)},
	}, x.started(), "named after the purchase, the envelope byte for byte as input")

	env, err := events.Decode([]byte(x.started()[0][1]))
	require.NoError(t, err)
	require.Equal(t, rows[0].EventID, env.EventID)
}

// refund.requested starts <purchase id>-refund: the refund's own execution,
// beside the purchase's, with the envelope as input; a republished row
// starts the same name again.
func TestWorkflowStarterNamesTheRefundExecution(t *testing.T) {
	t.Parallel()
	x := &fakeExecutions{}
	starter, err := relay.NewWorkflowStarter(
		relay.Workflows{events.TypePurchaseRequested: x, events.TypeRefundRequested: x},
		relay.NamedBy(events.TypeRefundRequested, relay.RefundExecution),
	)
	require.NoError(t, err)
	rows := []outbox.Row{purchaseRow(t, "p-1", t0), refundRow(t, "p-1", t0), refundRow(t, "p-1", t0)}
	msgs := []relay.Message{relay.MessageOf(rows[0]), relay.MessageOf(rows[1]), relay.MessageOf(rows[2])}
	n, err := starter.Publish(context.Background(), msgs)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, [][2]string{
		{"p-1", string(rows[0].Payload)},
		{"p-1-refund", string(rows[1].Payload)},
		{"p-1-refund", string(rows[2].Payload)},
	}, x.started())

	// A person's refund after a failed one: an execution of its own.
	env, err := events.New(events.NewID(), t0, events.RefundRequested{PurchaseID: "p-1", PaymentID: "pay-1", Reason: "resolved", Attempt: 2})
	require.NoError(t, err)
	second, err := outbox.NewRow(env, t0)
	require.NoError(t, err)
	_, err = starter.Publish(context.Background(), []relay.Message{relay.MessageOf(second)})
	require.NoError(t, err)
	require.Equal(t, "p-1-refund-2", x.started()[3][0])

	_, err = relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: x},
		relay.NamedBy(events.TypeRefundRequested, relay.RefundExecution))
	require.ErrorContains(t, err, "no state machine")
}

func refundRow(t *testing.T, purchaseID string, at time.Time) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.RefundRequested{PurchaseID: purchaseID, PaymentID: "pay-1", Reason: "late payment"})
	require.NoError(t, err)
	r, err := outbox.NewRow(env, at)
	require.NoError(t, err)
	return r
}

func TestWorkflowStarterStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	x := &fakeExecutions{failOn: map[string]error{"p-2": errors.New("ThrottlingException")}}
	starter, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: x})
	require.NoError(t, err)
	rows := []outbox.Row{purchaseRow(t, "p-1", t0), purchaseRow(t, "p-2", t0), purchaseRow(t, "p-3", t0)}
	msgs := make([]relay.Message, len(rows))
	for i, r := range rows {
		msgs[i] = relay.MessageOf(r)
	}

	n, err := starter.Publish(context.Background(), msgs)
	require.Equal(t, 1, n)
	require.ErrorContains(t, err, "ThrottlingException")
	require.ErrorContains(t, err, rows[1].EventID)
	require.NotErrorIs(t, err, relay.ErrNoRoute, "a transient failure is retried")
	require.Len(t, x.started(), 1, "nothing after the failed message")

	// The retry from the failed message starts the rest.
	n, err = starter.Publish(context.Background(), msgs[n:])
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, x.started(), 3)
}

func TestWorkflowStarterRefusesWhatItCannotName(t *testing.T) {
	t.Parallel()
	x := &fakeExecutions{}
	starter, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: x})
	require.NoError(t, err)

	other := relay.MessageOf(refundRow(t, "p-1", t0)) // a workflow type this starter has no state machine for
	n, err := starter.Publish(context.Background(), []relay.Message{other})
	require.Zero(t, n)
	require.ErrorIs(t, err, relay.ErrNoRoute)

	anonymous := relay.MessageOf(purchaseRow(t, "p-1", t0))
	anonymous.AggregateID = ""
	n, err = starter.Publish(context.Background(), []relay.Message{anonymous})
	require.Zero(t, n)
	require.ErrorContains(t, err, "no aggregate id")
	require.Empty(t, x.started())
}

func TestNewWorkflowStarterValidates(t *testing.T) {
	t.Parallel()
	_, err := relay.NewWorkflowStarter(nil)
	require.ErrorContains(t, err, "no workflows")
	_, err = relay.NewWorkflowStarter(relay.Workflows{
		events.TypeEnrollmentCreated: &fakeExecutions{}, events.TypePurchaseRequested: nil,
	})
	require.ErrorContains(t, err, `"enrollment.created" is not a workflow type`)
	require.ErrorContains(t, err, "nil executions for purchase.requested")
}

// TestRelayRoutesWorkflowsToTheStarter: in one batch, events go to the
// topic and purchase.requested to the state machine, in order, and every
// row is marked.
func TestRelayRoutesWorkflowsToTheStarter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evs := w.enroll(2, time.Second)
	p := purchaseRow(t, "p-1", t0)
	rows := []outbox.Row{evs[0], p, evs[1]}
	topic, x := &fakePublisher{}, &fakeExecutions{}
	starter, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: x})
	require.NoError(t, err)
	marker := &recordingMarker{}
	r := newRelay(t, relay.Config{
		Routes: relay.Routes{events.KindEvent: topic, events.KindWorkflow: starter},
		Outbox: marker,
	})

	n, err := r.Publish(w.ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, eventIDs(evs), topic.attempted())
	require.Equal(t, [][2]string{{"p-1", string(p.Payload)}}, x.started())
	for _, row := range rows {
		require.True(t, marker.isMarked(row.EventID), "row %s marked", row.EventID)
	}
}

// TestWorkflowStarterOnStepFunctions relays the same purchase.requested row
// three times (a retried stream batch, then the sweeper) through the real
// Step Functions client to the local executor: one execution, named after
// the purchase, with the envelope as its input.
func TestWorkflowStarterOnStepFunctions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sfntest.New(t, sfntest.Options{Start: t0, Manual: true})
	machine := e.CreateStateMachine("purchase",
		`{"StartAt":"Entry","States":{"Entry":{"Type":"Pass","Parameters":{"purchase_id.$":"$.data.purchase_id"},"End":true}}}`)
	client, err := sfnclient.New(e.Client(), machine)
	require.NoError(t, err)
	starter, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: client})
	require.NoError(t, err)
	marker := &recordingMarker{}
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindWorkflow: starter}, Outbox: marker})

	row := purchaseRow(t, "p-42", t0)
	for attempt := range 3 {
		n, err := r.Publish(ctx, []outbox.Row{row})
		require.NoError(t, err, "attempt %d: an existing execution of that name is success", attempt+1)
		require.Equal(t, 1, n)
	}
	require.True(t, marker.isMarked(row.EventID))

	xs, err := e.Service.ListExecutions(ctx, machine, "")
	require.NoError(t, err)
	require.Len(t, xs, 1, "one execution however often the row is relayed")
	require.Equal(t, "p-42", xs[0].Name)
	done := e.Wait(xs[0].ARN)
	require.Equal(t, sfn.StatusSucceeded, done.Status)
	require.JSONEq(t, string(row.Payload), done.Input)
	require.JSONEq(t, `{"purchase_id":"p-42"}`, done.Output, "the definition reads the envelope's data")
}
