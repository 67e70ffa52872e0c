package mail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The outcome classes of a send. Match them with errors.Is.
var (
	// ErrRejected: the provider refused the message for a reason a retry
	// cannot fix (a 4xx other than 408 and 429). Permanent.
	ErrRejected = errors.New("mail provider rejected the message")
	// ErrKeyReused: the idempotency key already names a different message
	// (409 idempotency_key_reused). Permanent; it also matches ErrRejected.
	// The provider holds a message under this key, so something was sent.
	ErrKeyReused = errors.New("idempotency key already used for a different message")
	// ErrRateLimited: the provider asked to slow down (429). Transient; see
	// RetryAfter for how long it asked to wait.
	ErrRateLimited = errors.New("mail provider rate limit exceeded")
	// ErrUnavailable: the provider failed (5xx, 408) or could not be reached
	// before the request started to be written. The message was not
	// accepted. Transient.
	ErrUnavailable = errors.New("mail provider unavailable")
	// ErrOutcomeUnknown: the request may have reached the provider, but no
	// answer came back. The message may have been accepted; retry with the
	// same idempotency key to find out without sending twice.
	ErrOutcomeUnknown = errors.New("mail provider outcome unknown")
)

// Message is one e-mail. Its JSON form is the provider's request body.
type Message struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

// Receipt is the provider's acknowledgement of an accepted message.
type Receipt struct {
	// MessageID is the provider's id of the message ("" if a 2xx answer
	// carried none).
	MessageID string
	// Replayed is true when the provider had already accepted a message
	// under this key and answered with the original (header
	// Idempotent-Replayed: true): nothing new was sent.
	Replayed bool
}

// ProviderError is a non-2xx answer from the provider. It matches exactly
// one outcome class with errors.Is (ErrKeyReused also matches ErrRejected).
type ProviderError struct {
	Status  int
	Code    string // the provider's error.code, "" if the body had none
	Message string // the provider's error.message
	// RetryAfter is the provider's Retry-After (429, 503), 0 if absent.
	RetryAfter time.Duration
	class      error
}

func (e *ProviderError) Error() string {
	msg := fmt.Sprintf("mail provider answered %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

func (e *ProviderError) Unwrap() []error {
	if e.class == ErrKeyReused {
		return []error{ErrKeyReused, ErrRejected}
	}
	return []error{e.class}
}

// RetryAfter returns the wait the provider asked for when err carries one
// (a *ProviderError with a Retry-After header).
func RetryAfter(err error) (time.Duration, bool) {
	if pe, ok := errors.AsType[*ProviderError](err); ok && pe.RetryAfter > 0 {
		return pe.RetryAfter, true
	}
	return 0, false
}

// Config configures a Client.
type Config struct {
	// BaseURL is the provider's base URL, e.g. "http://127.0.0.1:4580".
	BaseURL string
	// Timeout bounds one Send from connecting to reading the answer
	// (default DefaultTimeout). A send that times out after its request
	// was written is ErrOutcomeUnknown.
	Timeout time.Duration
	// Transport carries the requests; nil means a clone of
	// http.DefaultTransport of the Client's own that keeps MaxIdleConns
	// connections to the provider open between sends.
	Transport http.RoundTripper
	// Now is the clock for Retry-After given as an HTTP date (default
	// time.Now).
	Now func() time.Time
}

// MaxIdleConns is how many idle connections to the provider the default
// transport keeps. A notifier instance sends up to ten mails at once; Go's
// default keeps two per host and closes the others as each send ends, so
// every batch would dial (over TLS: handshake) eight connections again.
const MaxIdleConns = 16

// DefaultTimeout leaves room within a 30 s function timeout for marking the
// outcome after a slow provider.
const DefaultTimeout = 10 * time.Second

// maxResponseBytes bounds how much of an answer is read.
const maxResponseBytes = 64 << 10

// Client sends messages to the provider. It is safe for concurrent use.
type Client struct {
	endpoint string
	http     *http.Client
	now      func() time.Time
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case cfg.BaseURL == "":
		return nil, errors.New("mail client: BaseURL is required")
	case err != nil:
		return nil, fmt.Errorf("mail client: BaseURL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("mail client: BaseURL %q: want an absolute http(s) URL", cfg.BaseURL)
	case cfg.Timeout < 0:
		return nil, errors.New("mail client: Timeout must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = MaxIdleConns
		cfg.Transport = t
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/v1/messages",
		http: &http.Client{
			Transport: cfg.Transport,
			Timeout:   cfg.Timeout,
			// A redirect would need the body again; the provider never
			// redirects a send, so treat one as an answer.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: cfg.Now,
	}, nil
}

// Send asks the provider to send m under the idempotency key, once: exactly
// one request goes on the wire (see the package documentation), and the
// error, if any, matches exactly one of ErrRejected, ErrRateLimited,
// ErrUnavailable or ErrOutcomeUnknown. Calling Send again with the same key
// and message is safe in every case; with the same key and another message
// the provider answers ErrKeyReused.
func (c *Client) Send(ctx context.Context, key string, m Message) (Receipt, error) {
	if key == "" {
		return Receipt{}, errors.New("send mail: empty idempotency key")
	}
	body, err := json.Marshal(m)
	if err != nil {
		return Receipt{}, fmt.Errorf("send mail: encode: %w", err)
	}

	// mayHaveArrived turns true when the request starts to be written
	// (its headers reach the connection's buffer); from then on a missing
	// answer is an unknown outcome.
	var mayHaveArrived atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { mayHaveArrived.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return Receipt{}, fmt.Errorf("send mail: %w", err)
	}
	// Without GetBody the request is not replayable, so the Transport never
	// resends it on its own after a dropped connection (package doc).
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)

	resp, err := c.http.Do(req)
	if err != nil {
		if mayHaveArrived.Load() {
			return Receipt{}, fmt.Errorf("send mail: no answer after the request was sent: %w: %w", ErrOutcomeUnknown, err)
		}
		return Receipt{}, fmt.Errorf("send mail: request not sent: %w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Accepted, whatever happens to the rest of the body.
		var ok struct {
			MessageID string `json:"message_id"`
		}
		if readErr == nil {
			_ = json.Unmarshal(raw, &ok) // the id is informational
		}
		return Receipt{MessageID: ok.MessageID, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, nil
	}
	return Receipt{}, fmt.Errorf("send mail: %w", c.providerError(resp, raw))
}

// providerError classifies a non-2xx answer.
func (c *Client) providerError(resp *http.Response, raw []byte) *ProviderError {
	var envelope struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &envelope) // a body without the envelope still has a status
	pe := &ProviderError{
		Status:     resp.StatusCode,
		Code:       envelope.Error.Code,
		Message:    envelope.Error.Message,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		pe.class = ErrRateLimited
	case s == http.StatusConflict && pe.Code == "idempotency_key_reused":
		pe.class = ErrKeyReused
	case s >= 500, s == http.StatusRequestTimeout:
		pe.class = ErrUnavailable
	default:
		// Other 4xx, and statuses a send never gets (1xx, 3xx): the same
		// request will get the same answer.
		pe.class = ErrRejected
	}
	return pe
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
// It returns 0 when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
