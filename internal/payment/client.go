package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/clubdev/club/internal/club/purchase"
)

// The classes of a failed call: the purchase domain's, which its
// PaymentProvider port names. Every error a Client returns matches exactly
// one of ErrUnknown, ErrUnavailable and ErrRejected.
var (
	// ErrUnknown: the call may or may not have taken effect.
	ErrUnknown = purchase.ErrProviderCallUnknown
	// ErrUnavailable: the provider did nothing and asks to retry later.
	ErrUnavailable = purchase.ErrProviderCallUnavailable
	// ErrRejected: the provider refused the request for good.
	ErrRejected = purchase.ErrProviderCallRejected
	// ErrNotFound: the payment or refund does not exist (a kind of
	// ErrRejected).
	ErrNotFound = fmt.Errorf("%w: not found", ErrRejected)
)

// Client implements the purchase domain's port.
var _ purchase.PaymentProvider = (*Client)(nil)

// The provider's objects are the purchase domain's types; the names here
// are the ones this package's callers have always used.
type (
	// Status is the state of a payment or refund at the provider.
	Status = purchase.ProviderStatus
	// Payment is a payment as the provider reports it.
	Payment = purchase.ProviderPayment
	// Refund is a refund as the provider reports it.
	Refund = purchase.ProviderRefund
	// CreatePaymentRequest is what a payment is asked for with.
	CreatePaymentRequest = purchase.PaymentRequest
)

const (
	StatusPending   = purchase.ProviderPending
	StatusSucceeded = purchase.ProviderSucceeded
	StatusFailed    = purchase.ProviderFailed
)

// The provider's JSON: its objects and the body of a payment request.
type (
	paymentJSON struct {
		ID          string `json:"payment_id"`
		Status      Status `json:"status"`
		Reference   string `json:"reference"`
		AmountCents int64  `json:"amount_cents"`
		Currency    string `json:"currency"`
		CheckoutURL string `json:"checkout_url"`
	}
	refundJSON struct {
		ID          string `json:"refund_id"`
		PaymentID   string `json:"payment_id"`
		Status      Status `json:"status"`
		AmountCents int64  `json:"amount_cents"`
	}
	createPaymentJSON struct {
		AmountCents int64  `json:"amount_cents"`
		Currency    string `json:"currency"`
		Reference   string `json:"reference"`
	}
)

func (p paymentJSON) payment() Payment { return Payment(p) }
func (r refundJSON) refund() Refund    { return Refund(r) }

// ProviderError is an error answer of the provider: its HTTP status and
// the {"error":{"code","message"}} it sent, if any.
type ProviderError struct {
	StatusCode int
	Code       string
	Message    string
	class      error
}

func (e *ProviderError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("payment provider answered %d", e.StatusCode)
	}
	return fmt.Sprintf("payment provider answered %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// Unwrap returns the class of the error (ErrUnknown, ErrUnavailable,
// ErrRejected or ErrNotFound).
func (e *ProviderError) Unwrap() error { return e.class }

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures a Client.
type Config struct {
	// BaseURL is the provider's address, e.g. http://127.0.0.1:4581.
	BaseURL string
	// Timeout bounds each call (DefaultTimeout if zero).
	Timeout time.Duration
	// HTTPClient sends the requests; http.DefaultClient's transport if nil.
	HTTPClient *http.Client
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		errs = append(errs, errors.New("payment: BaseURL is required"))
	case err != nil:
		errs = append(errs, fmt.Errorf("payment: BaseURL: %w", err))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		errs = append(errs, fmt.Errorf("payment: BaseURL %q must be an absolute http(s) URL", c.BaseURL))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("payment: Timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Client calls the payment provider.
type Client struct {
	base    string
	timeout time.Duration
	http    *http.Client
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{base: strings.TrimRight(cfg.BaseURL, "/"), timeout: cfg.Timeout, http: cfg.HTTPClient}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// CreatePayment asks for a payment under idempotencyKey. The same key with
// the same request returns the same payment, as it is now, on every call:
// retry an ErrUnknown with the same key.
func (c *Client) CreatePayment(ctx context.Context, idempotencyKey string, req CreatePaymentRequest) (Payment, error) {
	var p paymentJSON
	if err := c.do(ctx, http.MethodPost, "/v1/payments", idempotencyKey, createPaymentJSON(req), &p); err != nil {
		return Payment{}, fmt.Errorf("create payment %s: %w", req.Reference, err)
	}
	return p.payment(), nil
}

// GetPayment reads a payment's status.
func (c *Client) GetPayment(ctx context.Context, paymentID string) (Payment, error) {
	var p paymentJSON
	if err := c.do(ctx, http.MethodGet, "/v1/payments/"+url.PathEscape(paymentID), "", nil, &p); err != nil {
		return Payment{}, fmt.Errorf("get payment %s: %w", paymentID, err)
	}
	return p.payment(), nil
}

// CreateRefund asks for a full refund of a payment under idempotencyKey;
// the same key returns the same refund on every call.
func (c *Client) CreateRefund(ctx context.Context, idempotencyKey, paymentID string) (Refund, error) {
	var r refundJSON
	body := struct {
		PaymentID string `json:"payment_id"`
	}{paymentID}
	if err := c.do(ctx, http.MethodPost, "/v1/refunds", idempotencyKey, body, &r); err != nil {
		return Refund{}, fmt.Errorf("refund payment %s: %w", paymentID, err)
	}
	return r.refund(), nil
}

// GetRefund reads a refund's status.
func (c *Client) GetRefund(ctx context.Context, refundID string) (Refund, error) {
	var r refundJSON
	if err := c.do(ctx, http.MethodGet, "/v1/refunds/"+url.PathEscape(refundID), "", nil, &r); err != nil {
		return Refund{}, fmt.Errorf("get refund %s: %w", refundID, err)
	}
	return r.refund(), nil
}

// maxAnswerBytes bounds what is read of an answer: the provider's objects
// are small, and a runaway body must not exhaust a Lambda's memory.
const maxAnswerBytes = 1 << 20

// do makes one call and classifies its outcome.
func (c *Client) do(ctx context.Context, method, path, key string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err) // a bug, not the provider's answer
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The request may have reached the provider and taken effect.
		return fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("%w: read answer: %w", ErrUnknown, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if err := json.Unmarshal(data, out); err != nil {
			// It said yes but not to what: the effect happened, its
			// details are unknown.
			return fmt.Errorf("%w: undecodable %d answer: %w", ErrUnknown, resp.StatusCode, err)
		}
		return nil
	}
	return providerError(resp.StatusCode, data)
}

// providerError classifies an error answer.
func providerError(status int, body []byte) *ProviderError {
	var envelope struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &envelope) // a body that is not the envelope leaves Code empty
	e := &ProviderError{StatusCode: status, Code: envelope.Error.Code, Message: envelope.Error.Message}
	switch {
	case status == http.StatusTooManyRequests:
		e.class = ErrUnavailable
	case status == http.StatusServiceUnavailable && strings.HasSuffix(e.Code, "_unavailable"):
		// The provider itself states that it did nothing. A bare 503 may
		// come from anywhere on the way, after the effect: unknown.
		e.class = ErrUnavailable
	case status == http.StatusNotFound:
		e.class = ErrNotFound
	case status >= 400 && status <= 499:
		e.class = ErrRejected
	default:
		// 5xx and anything unexpected: it may have happened.
		e.class = ErrUnknown
	}
	return e
}
