package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/patience"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
)

// TestBreakerProbesADeadProviderInsteadOfHammeringIt: while the provider is
// down, a hundred pending mails cost it the threshold's calls and then one
// probe per interval; the blocked sends are transient (unavailable, never
// unknown). Once a probe succeeds, every send goes through again.
func TestBreakerProbesADeadProviderInsteadOfHammeringIt(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(enrolledAt)
	sandbox := mailsandbox.New(mailsandbox.Options{Clock: clk})
	hs := httptest.NewServer(sandbox)
	t.Cleanup(hs.Close)
	client, err := mail.New(mail.Config{BaseURL: hs.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	b := &Breaker{Next: client, Threshold: 5, ProbeInterval: 5 * time.Second, Now: clk.Now}
	require.NoError(t, sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultError, Rate: 1}, nil))

	ctx := context.Background()
	sendAll := func(round int) (blocked int) {
		for i := range 100 {
			_, err := b.Send(ctx, fmt.Sprintf("notify-%d", i), message(i))
			if err == nil {
				continue
			}
			require.ErrorIs(t, err, mail.ErrUnavailable, "round %d, send %d", round, i)
			require.NotErrorIs(t, err, mail.ErrOutcomeUnknown, "the provider was not asked: the outcome is known")
			if errors.Is(err, ErrCircuitOpen) {
				blocked++
			}
		}
		return blocked
	}
	require.Equal(t, 95, sendAll(0), "five failures open the breaker")
	require.EqualValues(t, 5, sandbox.Stats().FaultsInjected)
	for round := 1; round <= 10; round++ {
		clk.Advance(5 * time.Second)
		require.Equal(t, 99, sendAll(round), "one probe per interval")
	}
	require.EqualValues(t, 15, sandbox.Stats().FaultsInjected, "5 + one probe per interval, for 1,100 sends")
	require.True(t, b.Stats().Open)

	require.NoError(t, sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultNone}, nil))
	clk.Advance(2 * time.Second)
	require.Equal(t, 100, sendAll(11), "no probe before the interval")
	clk.Advance(3 * time.Second)
	require.Equal(t, 0, sendAll(12), "the probe succeeded and closed the breaker")
	require.False(t, b.Stats().Open)
	require.Len(t, sandbox.Messages(""), 100, "every mail sent once")
}

// provider is a hand-written Mailer for the breaker's edges: it fails with
// mail.ErrUnavailable while down, panics for the key panicKey, counts its
// calls, and holds each call until hold is closed, if it is set.
type provider struct {
	mu       sync.Mutex
	down     bool
	panicKey string
	calls    int
	hold     chan struct{}
}

func (p *provider) Send(ctx context.Context, key string, _ mail.Message) (mail.Receipt, error) {
	p.mu.Lock()
	p.calls++
	down, panicKey, hold := p.down, p.panicKey, p.hold
	p.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if key == panicKey {
		panic("provider adapter bug")
	}
	if err := ctx.Err(); err != nil {
		return mail.Receipt{}, fmt.Errorf("send mail: request not sent: %w: %w", mail.ErrUnavailable, err)
	}
	if down {
		return mail.Receipt{}, fmt.Errorf("send mail: 503: %w", mail.ErrUnavailable)
	}
	return mail.Receipt{MessageID: "m-" + key}, nil
}

func (p *provider) set(f func(p *provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *provider) stats() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// openBreaker returns a breaker over a provider that is down, opened by
// its threshold of failures.
func openBreaker(t *testing.T) (*Breaker, *provider, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(enrolledAt)
	p := &provider{down: true}
	b := &Breaker{Next: p, Threshold: 3, ProbeInterval: 5 * time.Second, Now: clk.Now}
	for i := range 3 {
		_, err := b.Send(context.Background(), fmt.Sprintf("open-%d", i), message(i))
		require.ErrorIs(t, err, mail.ErrUnavailable)
	}
	require.True(t, b.Stats().Open)
	return b, p, clk
}

// TestBreakerIgnoresTheCallersCancellation: a send whose caller gave up
// (its context cancelled, or its deadline passed: the invocation's time ran
// out) says nothing about the provider. It neither closes an open breaker
// nor resets the count of failures, and a probe cut short that way leaves
// the next send free to probe.
func TestBreakerIgnoresTheCallersCancellation(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), enrolledAt) // long past
	t.Cleanup(cancelExpired)
	for name, ctx := range map[string]context.Context{"cancelled": cancelled, "deadline passed": expired} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, p, clk := openBreaker(t)
			clk.Advance(5 * time.Second)
			_, err := b.Send(ctx, "probe-cut-short", message(0))
			require.ErrorIs(t, err, mail.ErrUnavailable)
			require.True(t, b.Stats().Open, "the caller's end is not the provider's recovery")

			_, err = b.Send(context.Background(), "next", message(1))
			require.ErrorIs(t, err, mail.ErrUnavailable)
			require.NotErrorIs(t, err, ErrCircuitOpen, "the probe cut short left the next send free to probe")
			calls := p.stats()
			require.Equal(t, 5, calls, "three to open, the probe cut short, the next probe")
			require.True(t, b.Stats().Open)

			// While closed, a cancelled send between failures does not
			// reset their count.
			p.set(func(p *provider) { p.down = false })
			clk.Advance(5 * time.Second)
			_, err = b.Send(context.Background(), "recovered", message(2))
			require.NoError(t, err)
			require.False(t, b.Stats().Open)
			p.set(func(p *provider) { p.down = true })
			for i := range 3 {
				_, err := b.Send(context.Background(), fmt.Sprintf("again-%d", i), message(i))
				require.ErrorIs(t, err, mail.ErrUnavailable)
				if i == 1 {
					_, err = b.Send(ctx, "cut-short", message(i))
					require.ErrorIs(t, err, mail.ErrUnavailable)
					require.False(t, b.Stats().Open)
				}
			}
			require.True(t, b.Stats().Open, "three failures with a cancelled send among them open it")
		})
	}
}

// TestBreakerCountsTheClientsOwnTimeout: the mail client's own timeout
// leaves the caller's context alive; a provider that does not answer in
// time is down.
func TestBreakerCountsTheClientsOwnTimeout(t *testing.T) {
	t.Parallel()
	b := &Breaker{Next: timedOut{}, Threshold: 3, Now: clock.NewFake(enrolledAt).Now}
	for i := range 3 {
		_, err := b.Send(context.Background(), fmt.Sprintf("k-%d", i), message(i))
		require.ErrorIs(t, err, mail.ErrOutcomeUnknown)
	}
	require.True(t, b.Stats().Open)
}

// timedOut fails every send as the mail client does when its own timeout
// passes.
type timedOut struct{}

func (timedOut) Send(context.Context, string, mail.Message) (mail.Receipt, error) {
	return mail.Receipt{}, fmt.Errorf("send mail: no answer after the request was sent: %w: %w", mail.ErrOutcomeUnknown, context.DeadlineExceeded)
}

// TestBreakerSurvivesAPanickingSend: a Send that panics passes the panic
// on, and says nothing about the provider; above all a panicking probe does
// not leave the breaker refusing every send until the instance is recycled.
func TestBreakerSurvivesAPanickingSend(t *testing.T) {
	t.Parallel()
	b, p, clk := openBreaker(t)
	p.set(func(p *provider) { p.panicKey = "bad" })
	clk.Advance(5 * time.Second)
	require.PanicsWithValue(t, "provider adapter bug", func() { _, _ = b.Send(context.Background(), "bad", message(0)) })
	require.True(t, b.Stats().Open)

	p.set(func(p *provider) { p.down = false })
	_, err := b.Send(context.Background(), "good", message(1))
	require.NoError(t, err, "the next send probed, found the provider up and closed the breaker")
	require.False(t, b.Stats().Open)

	// A panic while closed does not count as a failure either.
	p.set(func(p *provider) { p.down = true })
	for i := range 2 {
		_, _ = b.Send(context.Background(), fmt.Sprintf("f-%d", i), message(i))
	}
	require.Panics(t, func() { _, _ = b.Send(context.Background(), "bad", message(2)) })
	require.False(t, b.Stats().Open, "two failures and a panic are not three failures")
}

// TestBreakerUnderConcurrentSenders: many senders at once, as a batch's
// ten goroutines and more. While the provider is down they cost it at most
// the threshold plus the sends already in flight, then exactly one probe
// per interval, however many send at the same instant, whatever panics or
// cancellations happen among them, and one stand-in for that probe among
// the sends refused while it is in flight; once a probe succeeds
// everything goes out. Run it with -race.
func TestBreakerUnderConcurrentSenders(t *testing.T) {
	t.Parallel()
	const senders, each = 32, 20
	clk := clock.NewFake(enrolledAt)
	p := &provider{down: true, panicKey: "panics"}
	b := &Breaker{Next: p, Threshold: 5, ProbeInterval: 5 * time.Second, Now: clk.Now}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	// round sends from every sender at once and returns how many were
	// refused by the open breaker and how many were sent; when mixed, some
	// sends panic and some have their caller's context cancelled. When
	// held, the provider holds its calls until every other send has been
	// refused: the probe is in flight all the while.
	var standIns int // refusals that stand in for the probe in flight (RefusedDuringProbe)
	round := func(name string, mixed, held bool) (refused, sent int) {
		standIns = 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		if held {
			p.set(func(p *provider) { p.hold = make(chan struct{}) })
			defer p.set(func(p *provider) { p.hold = nil })
		}
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					key, ctx := fmt.Sprintf("%s-%d-%d", name, g, i), context.Background()
					switch {
					case mixed && g == 0 && i%5 == 0:
						key = "panics"
					case mixed && g == 1 && i%5 == 0:
						ctx = cancelled
					}
					_, err := func() (_ mail.Receipt, err error) {
						defer func() {
							if recover() != nil {
								err = errors.New("panicked")
							}
						}()
						return b.Send(ctx, key, message(i))
					}()
					mu.Lock()
					switch {
					case err == nil:
						sent++
					case errors.Is(err, ErrCircuitOpen):
						assert.ErrorIs(t, err, mail.ErrUnavailable)
						refused++
						if _, ok := RefusedDuringProbe(err); ok {
							standIns++
						}
					}
					mu.Unlock()
				}
			})
		}
		if held {
			assert.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return refused == (senders-1)*each // the probe's sender waits for it
			}, patience.Wait(), time.Millisecond, "every other sender's sends refused while the probe is in flight")
			close(p.hold)
		}
		wg.Wait()
		return refused, sent
	}

	const oddOnes = 2 * each / 5 // panics and cancellations of a mixed round
	refused, _ := round("down", true, false)
	calls := p.stats()
	require.True(t, b.Stats().Open)
	require.LessOrEqual(t, calls, 5+senders-1+oddOnes, "the threshold and the sends already admitted, panics and cancellations included")
	require.Equal(t, senders*each-calls, refused, "every other send refused without a call")

	for i := range 4 {
		clk.Advance(5 * time.Second)
		before := p.stats()
		mixed := i == 1
		refused, _ := round(fmt.Sprintf("interval-%d", i), mixed, !mixed)
		after := p.stats()
		require.True(t, b.Stats().Open)
		if mixed {
			// A probe that panicked or was cancelled frees the next send
			// to probe; the round that follows shows nothing is wedged.
			require.GreaterOrEqual(t, refused, senders*each-1-oddOnes)
			continue
		}
		require.Equal(t, senders*each-1, refused, "interval %d: one probe, however many senders", i)
		require.Equal(t, before+1, after)
		require.Equal(t, 1, standIns, "interval %d: one stand-in for the probe in flight, the others refused as ordinary mail", i)
	}

	p.set(func(p *provider) { p.down = false })
	clk.Advance(5 * time.Second)
	_, sent := round("recovering", false, false)
	require.Positive(t, sent, "the probe succeeded")
	require.False(t, b.Stats().Open)
	refused, sent = round("recovered", true, false)
	require.Zero(t, refused)
	require.Equal(t, senders*each-oddOnes, sent, "every send but the panics and the cancelled ones")
}

// TestBreakerPassIsTheSendsLeave: a pass taken before a send's writes is
// the send's leave: while it is out (the probe's) every other send is
// refused, the send that carries it calls the provider once, and a pass
// given back unused lets the next send probe.
func TestBreakerPassIsTheSendsLeave(t *testing.T) {
	t.Parallel()
	b, p, clk := openBreaker(t)
	clk.Advance(5 * time.Second)
	pass, err := b.Admit()
	require.NoError(t, err, "time for a probe")
	_, err = b.Admit()
	require.ErrorIs(t, err, ErrCircuitOpen, "the probe is out")
	pass.Release()
	pass.Release() // twice is harmless
	require.Equal(t, 3, p.stats(), "no call for a pass given back")

	pass, err = b.Admit()
	require.NoError(t, err, "the pass given back freed the probe")
	_, err = b.Send(WithPass(context.Background(), pass), "probe", message(0))
	require.ErrorIs(t, err, mail.ErrUnavailable)
	require.NotErrorIs(t, err, ErrCircuitOpen, "the send used its pass")
	pass.Release() // after use: nothing
	require.Equal(t, 4, p.stats())
	_, err = b.Admit()
	require.ErrorIs(t, err, ErrCircuitOpen, "the failed probe set the next interval")
}

// TestBreakerSaysWhenToProbeAndWhenToRelease: the failure that opens the
// breaker, a failed probe and a refusal say when the next probe is due
// (the mail that will be it); other failures do not. A probe that says
// nothing leaves the next probe due at once. Parked mail is due for release when
// the breaker closes, on the first answer an instance sees, and once per
// ReleaseEvery while the provider answers; never while it is down.
func TestBreakerSaysWhenToProbeAndWhenToRelease(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(enrolledAt)
	p := &provider{down: true}
	b := &Breaker{Next: p, Threshold: 3, ProbeInterval: 5 * time.Second, ReleaseEvery: time.Minute, Now: clk.Now}
	for i := range 3 {
		_, err := b.Send(context.Background(), fmt.Sprintf("k-%d", i), message(i))
		wait, ok := NextProbeIn(err)
		require.Equal(t, i == 2, ok, "only the failure that opens it, failure %d", i)
		if ok {
			require.Equal(t, 5*time.Second, wait)
		}
	}
	require.False(t, b.TakeRelease(), "nothing to release while down")
	clk.Advance(5 * time.Second)
	_, err := b.Send(context.Background(), "probe", message(0))
	wait, ok := NextProbeIn(err)
	require.True(t, ok, "a failed probe")
	require.Equal(t, 5*time.Second, wait)
	clk.Advance(2 * time.Second)
	_, err = b.Send(context.Background(), "refused", message(0))
	require.ErrorIs(t, err, ErrCircuitOpen)
	wait, ok = NextProbeIn(err)
	require.True(t, ok, "a refusal says when the next probe may go")
	require.Equal(t, 3*time.Second, wait, "the rest of the interval")
	require.False(t, b.TakeRelease())

	clk.Advance(3 * time.Second)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Send(cancelled, "cancelled probe", message(0))
	wait, ok = NextProbeIn(err)
	require.True(t, ok, "a probe that said nothing")
	require.Zero(t, wait, "the next probe may go at once")
	require.True(t, b.Stats().Open, "still open")

	p.set(func(p *provider) { p.down = false })
	_, err = b.Send(context.Background(), "probe", message(0))
	require.NoError(t, err)
	require.True(t, b.TakeRelease(), "the breaker closed")
	require.False(t, b.TakeRelease(), "taken")
	_, err = b.Send(context.Background(), "next", message(0))
	require.NoError(t, err)
	require.False(t, b.TakeRelease(), "not again within ReleaseEvery")
	b.ReleaseDue()
	require.True(t, b.TakeRelease(), "a release cut short is due again")
	clk.Advance(time.Minute)
	_, err = b.Send(context.Background(), "later", message(0))
	require.NoError(t, err)
	require.True(t, b.TakeRelease(), "once a minute while the provider answers")

	fresh := &Breaker{Next: p, Now: clk.Now}
	_, err = fresh.Send(context.Background(), "first", message(0))
	require.NoError(t, err)
	require.True(t, fresh.TakeRelease(), "the first answer a new instance sees")
}
