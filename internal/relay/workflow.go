package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/purchase"
)

// Executions starts executions of one state machine; *sfnclient.Client
// implements it.
type Executions interface {
	// StartExecution starts an execution named name with input (JSON). An
	// execution of that name that already exists is success: the name makes
	// the start idempotent.
	StartExecution(ctx context.Context, name, input string) error
}

// Workflows says which state machine runs each workflow type.
type Workflows map[events.Type]Executions

// WorkflowStarter is the publisher of workflow rows (events.KindWorkflow,
// such as purchase.requested): it starts one execution per row, named after
// the row's aggregate id (or as NamedBy says for its type), with the
// envelope JSON as the input. A row
// published again (a retried stream batch, the sweeper) starts the same name
// again, which the state machine answers with the existing execution: one
// execution per aggregate, however often its row is relayed. It is safe for
// concurrent use.
type WorkflowStarter struct {
	workflows Workflows
	names     map[events.Type]func(Message) (string, error)
}

// WorkflowOption configures a WorkflowStarter.
type WorkflowOption func(*WorkflowStarter)

// NamedBy names the executions of workflow type t with name(message)
// instead of the aggregate id: refund.requested starts <purchase id>-refund,
// beside the purchase's own execution. A name error leaves the row pending.
func NamedBy(t events.Type, name func(Message) (string, error)) WorkflowOption {
	return func(w *WorkflowStarter) { w.names[t] = name }
}

var _ Publisher = (*WorkflowStarter)(nil)

// NewWorkflowStarter returns a starter for the given workflow types.
func NewWorkflowStarter(workflows Workflows, opts ...WorkflowOption) (*WorkflowStarter, error) {
	if len(workflows) == 0 {
		return nil, errors.New("workflow starter: no workflows")
	}
	var errs []error
	for t, x := range workflows {
		if kind, ok := events.KindOf(t); !ok || kind != events.KindWorkflow {
			errs = append(errs, fmt.Errorf("workflow starter: %q is not a workflow type", t))
		}
		if x == nil {
			errs = append(errs, fmt.Errorf("workflow starter: nil executions for %s", t))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := &WorkflowStarter{workflows: maps.Clone(workflows), names: map[events.Type]func(Message) (string, error){}}
	for _, o := range opts {
		o(w)
	}
	for t := range w.names {
		if _, ok := w.workflows[t]; !ok {
			return nil, fmt.Errorf("workflow starter: a name for %s, which has no state machine", t)
		}
	}
	return w, nil
}

// Publish starts an execution per message, in order, and stops at the first
// that fails. A type with no state machine fails with ErrNoRoute, and a
// message without an aggregate id (no name to make the start idempotent)
// fails too; both leave the row pending.
func (w *WorkflowStarter) Publish(ctx context.Context, msgs []Message) (int, error) {
	for i, m := range msgs {
		x := w.workflows[m.Type]
		switch {
		case x == nil:
			return i, fmt.Errorf("start workflow for event %s: %w for workflow type %s", m.EventID, ErrNoRoute, m.Type)
		case m.AggregateID == "":
			return i, fmt.Errorf("start workflow for event %s (%s): no aggregate id to name the execution", m.EventID, m.Type)
		}
		name := m.AggregateID
		if f := w.names[m.Type]; f != nil {
			var err error
			if name, err = f(m); err != nil {
				return i, fmt.Errorf("start workflow for event %s (%s): name the execution: %w", m.EventID, m.Type, err)
			}
		}
		if err := x.StartExecution(ctx, name, string(m.Body)); err != nil {
			return i, fmt.Errorf("start workflow %s for event %s (%s): %w", name, m.EventID, m.Type, err)
		}
	}
	return len(msgs), nil
}

// RefundExecution names the execution a refund.requested message starts
// (purchase.RefundRequestExecutionName): <purchase id>-refund, or
// <purchase id>-refund-<n> for a later refund of the same purchase.
func RefundExecution(m Message) (string, error) {
	env, err := events.Decode(m.Body)
	if err != nil {
		return "", err
	}
	r, err := env.RefundRequested()
	if err != nil {
		return "", err
	}
	return purchase.RefundRequestExecutionName(r), nil
}
