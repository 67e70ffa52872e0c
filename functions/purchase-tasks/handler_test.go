package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
)

// Each domain error becomes the error type the state machine matches; the
// name is what aws-lambda-go reports (the Go type name).
func TestTaskErrorNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		name string
	}{
		{fmt.Errorf("x: %w", purchase.ErrStaleStep), "StaleStep"},
		{fmt.Errorf("%w: %w", purchase.ErrStaleStep, &purchase.TransitionError{From: "confirmed", To: "expired"}), "StaleStep"},
		{purchase.ErrHoldExpired, "HoldExpired"},
		{fmt.Errorf("request: %w", purchase.ErrPaymentUnknown), "PaymentUnknown"},
		{purchase.ErrPaymentRejected, "PaymentRejected"},
		{purchase.ErrProviderUnavailable, "ProviderUnavailable"},
		{purchase.ErrPaymentSucceeded, "PaymentSucceeded"},
		{fmt.Errorf("%w: %w", purchase.ErrGrantFailed, purchase.ErrAlreadyHasAccess), "GrantFailed"},
		{purchase.ErrRefundUnknown, "RefundUnknown"},
		{purchase.ErrRefundPending, "RefundPending"},
		{purchase.ErrRefundFailed, "RefundFailed"},
		{purchase.ErrRefundRejected, "RefundRejected"},
		{fmt.Errorf("get purchase p-1: %w", club.ErrNotFound), "PurchaseNotFound"},
		{fmt.Errorf("%w: unknown step", errBadInput), "BadTaskInput"},
		{club.ErrContention, "Transient"},
		{errors.New("dynamodb: connection reset"), "Transient"},
	}
	for _, tt := range tests {
		got := taskError(tt.err)
		require.Equal(t, tt.name, errorTypeName(got), "%v", tt.err)
		require.ErrorIs(t, got, tt.err, "the domain error is kept")
		require.Equal(t, tt.err.Error(), got.Error())
	}
	require.NoError(t, taskError(nil))
}

// Every error type the state machine names exists here (or is one Step
// Functions or Lambda itself raises), and every type here is handled by
// the state machine: a typo on either side would make a Catch dead.
func TestStateMachineNamesTheseErrorTypes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../statemachines/purchase.asl.json")
	require.NoError(t, err)
	ours := []string{"StaleStep", "HoldExpired", "PaymentUnknown", "PaymentRejected", "ProviderUnavailable",
		"PaymentSucceeded", "GrantFailed", "RefundUnknown", "RefundPending", "RefundFailed", "RefundRejected", "Transient",
		purchase.TaskErrorPaymentFailed}
	platform := []string{"States.ALL", "States.Timeout", "Lambda.ServiceException", "Lambda.AWSLambdaException",
		"Lambda.SdkClientException", "Lambda.TooManyRequestsException", "Lambda.ClientExecutionTimeoutException", "Lambda.Unknown",
		"Sandbox.Timedout", "Runtime.ExitError"}
	var named []string
	for _, m := range regexp.MustCompile(`"ErrorEquals": \[([^\]]*)\]`).FindAllStringSubmatch(string(b), -1) {
		for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
			named = append(named, q[1])
		}
	}
	require.NotEmpty(t, named)
	for _, n := range named {
		require.True(t, slices.Contains(ours, n) || slices.Contains(platform, n), "the state machine matches %q, which nothing raises", n)
	}
	for _, n := range ours {
		require.Contains(t, named, n, "nothing in the state machine handles %s", n)
	}
}

// awsLambdaRetry is the list AWS recommends retrying for every Task that
// invokes a Lambda function: throttling and service faults, a client-side
// timeout of the invocation, and Lambda.Unknown (how an out-of-memory kill
// or a runtime timeout without an error document surfaces).
var awsLambdaRetry = []string{
	"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
	"Lambda.TooManyRequestsException", "Lambda.ClientExecutionTimeoutException", "Lambda.Unknown",
}

// Every Task state retries the transient Lambda platform errors before any
// Catch sees them, so a throttle or a killed sandbox never reaches a person;
// and no ARN names a partition (the definition runs in aws-cn and aws-us-gov
// too).
func TestEveryTaskRetriesLambdaPlatformErrors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../statemachines/purchase.asl.json")
	require.NoError(t, err)
	require.NotContains(t, string(b), "arn:aws:", "a partition-bound ARN; use arn:${Partition}:")
	var def struct {
		States map[string]struct {
			Type     string
			Resource string
			Retry    []struct{ ErrorEquals []string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &def))
	tasks := 0
	for name, st := range def.States {
		if st.Type != "Task" {
			continue
		}
		tasks++
		var retried []string
		for _, r := range st.Retry {
			retried = append(retried, r.ErrorEquals...)
		}
		for _, want := range awsLambdaRetry {
			require.Contains(t, retried, want, "state %s does not retry %s", name, want)
		}
	}
	require.Equal(t, 13, tasks, "every Task state was checked")
}

// Every ${...} of the definition is a substitution the template must
// provide (DefinitionSubstitutions); this is the list to keep it in step.
func TestDefinitionSubstitutions(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../statemachines/purchase.asl.json")
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`\$\{([^}]+)\}`).FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	require.Equal(t, []string{"PurchaseTasksFunctionArn", "Partition"}, names)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, in := range []TaskInput{
		{Step: StepHold},
		{Step: "charge_twice", PurchaseID: "p-1"},
		{Step: StepAwaitPayment, PurchaseID: "p-1"},
	} {
		_, err := e.handler.Handle(e.ctx, in)
		var bad *BadTaskInput
		require.ErrorAs(t, err, &bad, "%+v", in)
	}
	_, err := e.handler.Handle(e.ctx, TaskInput{Step: StepHold, PurchaseID: "p-missing"})
	var missing *PurchaseNotFound
	require.ErrorAs(t, err, &missing)
}

func TestNotes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "the hold expired", note(nil, "the hold expired"))
	require.Equal(t, "States.Timeout", note(&CaughtError{Error: "States.Timeout"}, "x"))
	require.Equal(t, "GrantFailed: the student already has access",
		note(&CaughtError{Error: "GrantFailed", Cause: `{"errorMessage":"the student already has access","errorType":"GrantFailed"}`}, "x"))
	require.Equal(t, "PaymentFailed: the provider said so", note(&CaughtError{Error: "PaymentFailed", Cause: "the provider said so"}, "x"))
	require.Equal(t, "the provider reported the payment failed at the hold deadline",
		expiryNote(TaskInput{PaymentStatus: "failed"}))
}
