package sqsconsumer

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
)

// Defaults of Config.
const (
	DefaultBackoffBase = time.Second
	DefaultBackoffCap  = 30 * time.Second
)

// maxDelay is SQS's longest DelaySeconds.
const maxDelay = 15 * time.Minute

// Config configures a Consumer.
type Config struct {
	// Name names the consumer in logs and metrics (e.g. "notifier").
	Name string
	// QueueURL is the queue the messages come from; visibility changes go
	// to it.
	QueueURL string
	// DLQURL is the queue's dead-letter queue; permanent failures go to it.
	DLQURL string
	// Concurrency bounds how many messages of one batch are handled at once.
	// The default, 1, handles them one after another in batch order. Use
	// more only when the handler's effects do not depend on order. Messages
	// of one FIFO message group are always handled one after another.
	Concurrency int
	// BackoffBase and BackoffCap shape the delay before a transient failure
	// is retried (defaults DefaultBackoffBase, DefaultBackoffCap); see Backoff.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxReceiveCount is the queue's redrive maxReceiveCount, 0 if unknown.
	// When set, a transient failure of the last allowed delivery is
	// dead-lettered by the consumer with CodeRetriesExhausted and the error
	// as reason, instead of being moved by the redrive policy without one.
	MaxReceiveCount int
	// RetryBudget, when set, bounds a message's retries in time instead of
	// in receives: a transient failure is retried by sending a copy of the
	// message to QueueURL with the backoff as its DelaySeconds, carrying
	// the deadline (AttrRetryDeadline) and the deliveries so far
	// (AttrRetryAttempt), and the received one is acknowledged. Each copy is
	// received once per attempt, so the queue's maxReceiveCount only counts
	// the invocations that died before settling a copy (a crash, a
	// timeout): it stays a backstop, whatever the budget. The deadline is
	// the first copy's SentTimestamp plus RetryBudget; a transient failure
	// whose next retry could come after it is dead-lettered with
	// CodeRetryDeadlinePassed. A dead letter drops both attributes, so a
	// redrive starts a fresh budget. Standard queues only: a delayed copy
	// would break a FIFO group's order.
	RetryBudget time.Duration
	// ParkingURL, when set, is the parking queue: a queue no function
	// reads, where a message whose handler failed with Park waits until
	// Release moves it back to QueueURL (see park.go). It needs a client
	// that implements ParkingSQS, and a RetryBudget.
	ParkingURL string
	// VisibilityTimeout is the queue's visibility timeout. When set, the
	// consumer keeps extending the visibility of a message whose handler is
	// still running, every half of it, so long work is not delivered to a
	// second consumer meanwhile. 0 disables it: a Lambda consumer whose
	// queue's visibility timeout is at least six function timeouts (docs/principles.md §2)
	// never needs it.
	VisibilityTimeout time.Duration
	// Metrics receives Embedded Metric Format lines (default os.Stdout).
	Metrics io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Jitter returns a uniformly random duration in [0, n) (default
	// math/rand/v2.N). Tests make it deterministic.
	Jitter func(n time.Duration) time.Duration
}

func (c Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("sqsconsumer: Name is required"))
	}
	if c.QueueURL == "" {
		errs = append(errs, errors.New("sqsconsumer: QueueURL is required"))
	}
	if c.DLQURL == "" {
		errs = append(errs, errors.New("sqsconsumer: DLQURL is required"))
	}
	if c.QueueURL != "" && c.QueueURL == c.DLQURL {
		errs = append(errs, errors.New("sqsconsumer: QueueURL and DLQURL must differ"))
	}
	if c.ParkingURL != "" && (c.ParkingURL == c.QueueURL || c.ParkingURL == c.DLQURL) {
		errs = append(errs, errors.New("sqsconsumer: ParkingURL must differ from QueueURL and DLQURL"))
	}
	if c.ParkingURL != "" && c.RetryBudget <= 0 {
		errs = append(errs, errors.New("sqsconsumer: ParkingURL needs RetryBudget (a parked message keeps its deadline)"))
	}
	if c.Concurrency < 0 || c.MaxReceiveCount < 0 || c.BackoffBase < 0 || c.BackoffCap < 0 || c.VisibilityTimeout < 0 {
		errs = append(errs, errors.New("sqsconsumer: Concurrency, MaxReceiveCount, BackoffBase, BackoffCap and VisibilityTimeout must not be negative"))
	}
	if c.BackoffBase > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffBase {
		errs = append(errs, errors.New("sqsconsumer: BackoffCap must not be below BackoffBase"))
	}
	if c.RetryBudget < 0 {
		errs = append(errs, errors.New("sqsconsumer: RetryBudget must not be negative"))
	}
	if c.RetryBudget > 0 && isFIFO(c.QueueURL) {
		errs = append(errs, errors.New("sqsconsumer: RetryBudget needs a standard queue (a delayed copy would break a FIFO group's order)"))
	}
	// The cap as it will be: an unset one is filled in from BackoffBase.
	if capped := c.withDefaults().BackoffCap; c.RetryBudget > 0 && capped > maxDelay {
		errs = append(errs, fmt.Errorf("sqsconsumer: with RetryBudget, BackoffCap (%s, or BackoffBase when unset) must not exceed %s (SQS's longest DelaySeconds)", capped, maxDelay))
	}
	if c.VisibilityTimeout > 0 && c.VisibilityTimeout < 2*time.Second {
		errs = append(errs, errors.New("sqsconsumer: VisibilityTimeout must be at least 2s (SQS counts whole seconds)"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffCap == 0 {
		c.BackoffCap = max(DefaultBackoffCap, c.BackoffBase)
	}
	if c.Metrics == nil {
		c.Metrics = os.Stdout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Jitter == nil {
		c.Jitter = func(n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			return rand.N(n)
		}
	}
	return c
}
