package notifier

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/mail"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
)

// throttled is a mail sandbox that takes one message a second, on a fake
// clock that the PatientMailer's waits advance.
type throttled struct {
	clock   *clock.Fake
	sandbox *mailsandbox.Server
	mailer  *PatientMailer
	mu      sync.Mutex
	waits   []time.Duration
}

func newThrottled(t *testing.T) *throttled {
	t.Helper()
	f := &throttled{clock: clock.NewFake(enrolledAt)}
	f.sandbox = mailsandbox.New(mailsandbox.Options{RatePerSecond: 1, Clock: f.clock})
	hs := httptest.NewServer(f.sandbox)
	t.Cleanup(hs.Close)
	client, err := mail.New(mail.Config{BaseURL: hs.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	f.mailer = &PatientMailer{
		Next: client, Margin: 3 * time.Second,
		Jitter: func(d time.Duration) time.Duration { return d / 2 },
		Sleep: func(_ context.Context, d time.Duration) error {
			f.mu.Lock()
			f.waits = append(f.waits, d)
			f.mu.Unlock()
			f.clock.Advance(d)
			return nil
		},
	}
	return f
}

func message(i int) mail.Message {
	return mail.Message{To: fmt.Sprintf("s%d@example.com", i), Subject: "You are enrolled", Text: "A seat."}
}

func withDeadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A rate-limited send waits Retry-After (plus jitter) and goes out under the
// same key, inside the same invocation.
func TestPatientMailerWaitsOutTheRateLimit(t *testing.T) {
	t.Parallel()
	f := newThrottled(t)
	ctx := withDeadline(t, 30*time.Second)
	for i := range 3 {
		r, err := f.mailer.Send(ctx, fmt.Sprintf("notify-%d", i), message(i))
		require.NoError(t, err, "send %d", i)
		require.NotEmpty(t, r.MessageID)
	}
	require.Len(t, f.sandbox.Messages(""), 3, "every message sent once")
	st := f.sandbox.Stats()
	require.EqualValues(t, 3, st.Accepted)
	require.EqualValues(t, 2, st.RateLimited, "the second and third waited once each")
	require.Equal(t, []time.Duration{1125 * time.Millisecond, 1125 * time.Millisecond}, f.waits, "Retry-After 1 s plus half of a quarter of it")
}

// Without time left before the deadline for the wait and the margin, the
// rate limit is returned at once, with its Retry-After, for the queue to
// retry the message later.
func TestPatientMailerGivesUpNearTheDeadline(t *testing.T) {
	t.Parallel()
	f := newThrottled(t)
	ctx := withDeadline(t, 4*time.Second) // < 1.125 s wait + 3 s margin
	_, err := f.mailer.Send(ctx, "notify-0", message(0))
	require.NoError(t, err)
	_, err = f.mailer.Send(ctx, "notify-1", message(1))
	require.ErrorIs(t, err, mail.ErrRateLimited)
	after, ok := mail.RetryAfter(err)
	require.True(t, ok)
	require.Equal(t, time.Second, after)
	require.Empty(t, f.waits)

	_, err = f.mailer.Send(context.Background(), "notify-2", message(2))
	require.ErrorIs(t, err, mail.ErrRateLimited, "no deadline: never wait unbounded")
	require.Empty(t, f.waits)
}

// Other failures are not the PatientMailer's business.
func TestPatientMailerPassesOtherErrorsThrough(t *testing.T) {
	t.Parallel()
	f := newThrottled(t)
	require.NoError(t, f.sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultError, Rate: 1}, nil))
	_, err := f.mailer.Send(withDeadline(t, 30*time.Second), "notify-0", message(0))
	require.ErrorIs(t, err, mail.ErrUnavailable)
	require.Empty(t, f.waits)
}
