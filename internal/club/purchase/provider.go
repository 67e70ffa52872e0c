package purchase

import "errors"

// The payment provider as the saga sees it (docs/principles.md §7.2): what
// it is asked for and what it reports. PaymentProvider is typed with these;
// package payment implements it over the provider's HTTP API.

// PaymentRequest asks the provider for a payment.
type PaymentRequest struct {
	AmountCents int64
	Currency    string
	// Reference is the purchase id; the provider repeats it in its
	// webhooks.
	Reference string
}

// ProviderPayment is a payment as the provider reports it.
type ProviderPayment struct {
	ID          string
	Status      ProviderStatus
	Reference   string
	AmountCents int64
	Currency    string
	CheckoutURL string
}

// ProviderRefund is a refund as the provider reports it.
type ProviderRefund struct {
	ID          string
	PaymentID   string
	Status      ProviderStatus
	AmountCents int64
}

// The classes of a failed call to the provider. Every error a
// PaymentProvider returns matches (errors.Is) exactly one of them; the saga's
// steps map them to their own errors (ErrPaymentUnknown,
// ErrProviderUnavailable, ErrPaymentRejected, …).
var (
	// ErrProviderCallUnknown: the call may or may not have taken effect;
	// retry with the same idempotency key.
	ErrProviderCallUnknown = errors.New("payment provider: result unknown")
	// ErrProviderCallUnavailable: the provider did nothing and asks to
	// retry later.
	ErrProviderCallUnavailable = errors.New("payment provider: unavailable")
	// ErrProviderCallRejected: the provider refused the request for good.
	ErrProviderCallRejected = errors.New("payment provider: request rejected")
)
