package main

import (
	"errors"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
)

// The error types of the task steps. aws-lambda-go reports the Go type name
// of a returned error as its errorType, and Step Functions names the task's
// failure after it, so these names are what statemachines/purchase.asl.json
// matches in Retry and Catch. Each keeps the domain error it stands for.
type (
	// StaleStep: the purchase moved on; the step changed nothing.
	StaleStep struct{ stepError }
	// HoldExpired: too late to act; the saga expires the purchase.
	HoldExpired struct{ stepError }
	// PaymentUnknown: the provider's answer is unknown; retried with the
	// same key, then reconciliation.
	PaymentUnknown struct{ stepError }
	// PaymentRejected: the provider refused for good.
	PaymentRejected struct{ stepError }
	// ProviderUnavailable: the provider did nothing and asked to retry later.
	ProviderUnavailable struct{ stepError }
	// PaymentSucceeded: the expiry was refused because the payment succeeded
	// while the seat was held; the saga grants access.
	PaymentSucceeded struct{ stepError }
	// GrantFailed: paid but access cannot be granted; the saga refunds.
	GrantFailed struct{ stepError }
	// RefundUnknown: the refund request's result is unknown; retried with
	// the same key.
	RefundUnknown struct{ stepError }
	// RefundPending: accepted by the provider, not completed yet.
	RefundPending struct{ stepError }
	// RefundFailed: the provider reports the refund failed.
	RefundFailed struct{ stepError }
	// RefundRejected: the provider refused the refund request for good.
	RefundRejected struct{ stepError }
	// PurchaseNotFound: the execution names a purchase that does not exist.
	PurchaseNotFound struct{ stepError }
	// BadTaskInput: the state machine sent an input the function does not
	// understand (a definition and a function of different versions).
	BadTaskInput struct{ stepError }
	// Transient: anything else (the database, throttling, contention, a
	// bug): retried a few times, then the purchase goes to a person.
	Transient struct{ stepError }
)

// stepError carries the domain error.
type stepError struct{ err error }

func (e stepError) Error() string { return e.err.Error() }
func (e stepError) Unwrap() error { return e.err }

// taskError classifies a step's error once, into the type the state machine
// matches. The order puts the most specific meaning first.
func taskError(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range classes {
		if errors.Is(err, c.sentinel) {
			return c.wrap(stepError{err})
		}
	}
	return &Transient{stepError{err}}
}

var classes = []struct {
	sentinel error
	wrap     func(stepError) error
}{
	{purchase.ErrStaleStep, func(e stepError) error { return &StaleStep{e} }},
	{purchase.ErrHoldExpired, func(e stepError) error { return &HoldExpired{e} }},
	{purchase.ErrPaymentUnknown, func(e stepError) error { return &PaymentUnknown{e} }},
	{purchase.ErrPaymentRejected, func(e stepError) error { return &PaymentRejected{e} }},
	{purchase.ErrProviderUnavailable, func(e stepError) error { return &ProviderUnavailable{e} }},
	{purchase.ErrPaymentSucceeded, func(e stepError) error { return &PaymentSucceeded{e} }},
	{purchase.ErrGrantFailed, func(e stepError) error { return &GrantFailed{e} }},
	{purchase.ErrRefundUnknown, func(e stepError) error { return &RefundUnknown{e} }},
	{purchase.ErrRefundPending, func(e stepError) error { return &RefundPending{e} }},
	{purchase.ErrRefundFailed, func(e stepError) error { return &RefundFailed{e} }},
	{purchase.ErrRefundRejected, func(e stepError) error { return &RefundRejected{e} }},
	{errBadInput, func(e stepError) error { return &BadTaskInput{e} }},
	{club.ErrNotFound, func(e stepError) error { return &PurchaseNotFound{e} }},
}
