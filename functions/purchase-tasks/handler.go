package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
)

// The steps, as the state machine names them in each task's "step".
const (
	StepHold                = "hold"
	StepRequestPayment      = "request_payment"
	StepWaitForProvider     = "wait_for_provider"
	StepAwaitPayment        = "await_payment"
	StepStartChecking       = "start_checking"
	StepCheckPayment        = "check_payment"
	StepGrant               = "grant"
	StepExpire              = "expire"
	StepBeginRefund         = "begin_refund"
	StepRefund              = "refund"
	StepCheckRefund         = "check_refund"
	StepNeedsReconciliation = "needs_reconciliation"
)

// TaskInput is the payload every Task state sends.
type TaskInput struct {
	Step       string `json:"step"`
	PurchaseID string `json:"purchase_id"`
	// TaskToken is set for await_payment ($$.Task.Token).
	TaskToken string `json:"task_token,omitempty"`
	// Error is the error a Catch caught, for the steps it leads to
	// (expire, begin_refund, needs_reconciliation): it becomes the note.
	Error *CaughtError `json:"error,omitempty"`
	// PaymentStatus is the provider's answer, for expire after a check.
	PaymentStatus string `json:"payment_status,omitempty"`
	// Attempt counts the waits for a silent provider, for wait_for_provider.
	Attempt int `json:"attempt,omitempty"`
}

// CaughtError is what a Catch with ResultPath puts in the state: the error
// name and its cause (for a Lambda error, the error document as JSON text).
type CaughtError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Handler runs one step per invocation.
type Handler struct {
	steps *purchase.Steps
	log   *slog.Logger
}

// NewHandler returns a Handler over steps.
func NewHandler(steps *purchase.Steps, logger *slog.Logger) *Handler {
	return &Handler{steps: steps, log: logger}
}

// errBadInput: the task input is not one this function understands.
var errBadInput = errors.New("bad task input")

// Handle runs the step the input names and returns its result for the
// state machine, or a named error type (see errors.go). Steps without a
// result return {}.
func (h *Handler) Handle(ctx context.Context, in TaskInput) (any, error) {
	ctx = obs.WithAttrs(ctx, obs.PurchaseID(in.PurchaseID), slog.String("step", in.Step))
	start := time.Now()
	out, err := h.run(ctx, in)
	if err != nil {
		err = taskError(err)
		// Most named errors are the saga's normal flow (a timeout, a
		// pending refund); the unclassified ones need a look.
		level := slog.LevelInfo
		switch err.(type) {
		case *Transient, *BadTaskInput, *PurchaseNotFound:
			level = slog.LevelWarn
		}
		h.log.Log(ctx, level, "step failed", slog.String("error_type", errorTypeName(err)), obs.Err(err),
			slog.Duration("duration", time.Since(start)))
		return nil, err
	}
	h.log.InfoContext(ctx, "step done", slog.Duration("duration", time.Since(start)))
	return out, nil
}

// empty is the result of a step that has none: an object, so a ResultPath
// other than null would still get valid JSON.
type empty struct{}

func (h *Handler) run(ctx context.Context, in TaskInput) (any, error) {
	if in.PurchaseID == "" {
		return nil, fmt.Errorf("%w: no purchase_id", errBadInput)
	}
	id := in.PurchaseID
	switch in.Step {
	case StepHold:
		return h.steps.Hold(ctx, id)
	case StepRequestPayment:
		return h.steps.RequestPayment(ctx, id)
	case StepWaitForProvider:
		return h.steps.WaitForProvider(ctx, id, in.Attempt, note(in.Error, ""))
	case StepAwaitPayment:
		if in.TaskToken == "" {
			return nil, fmt.Errorf("%w: await_payment needs task_token", errBadInput)
		}
		return empty{}, h.steps.AwaitPayment(ctx, id, in.TaskToken)
	case StepStartChecking:
		return empty{}, h.steps.StartChecking(ctx, id)
	case StepCheckPayment:
		return h.steps.CheckPayment(ctx, id)
	case StepGrant:
		return empty{}, h.steps.Grant(ctx, id)
	case StepExpire:
		return empty{}, h.steps.Expire(ctx, id, expiryNote(in))
	case StepBeginRefund:
		return empty{}, h.steps.BeginRefund(ctx, id, note(in.Error, "access could not be granted"))
	case StepRefund:
		return h.steps.Refund(ctx, id)
	case StepCheckRefund:
		return empty{}, h.steps.CheckRefund(ctx, id)
	case StepNeedsReconciliation:
		return empty{}, h.steps.NeedReconciliation(ctx, id, note(in.Error, "the saga ended without a definite result"))
	}
	return nil, fmt.Errorf("%w: unknown step %q", errBadInput, in.Step)
}

func expiryNote(in TaskInput) string {
	if in.PaymentStatus != "" {
		return "the provider reported the payment " + in.PaymentStatus + " at the hold deadline"
	}
	return note(in.Error, "the hold expired")
}

// note turns a caught error into text for people: its name and, for a
// Lambda error document, its message.
func note(e *CaughtError, fallback string) string {
	if e == nil || e.Error == "" {
		return fallback
	}
	var doc struct {
		ErrorMessage string `json:"errorMessage"`
	}
	msg := e.Cause
	if json.Unmarshal([]byte(e.Cause), &doc) == nil && doc.ErrorMessage != "" {
		msg = doc.ErrorMessage
	}
	if msg == "" {
		return e.Error
	}
	return e.Error + ": " + msg
}

// errorTypeName is the name Lambda reports for err (its Go type name).
func errorTypeName(err error) string {
	name := fmt.Sprintf("%T", err)
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[i+1:]
		}
	}
	return name
}
