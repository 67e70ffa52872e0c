package purchasetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/club/purchase"
)

// Ports is one implementation of the purchase domain's ports over one
// shared state.
type Ports struct {
	Intensives  purchase.IntensiveRepository
	Purchases   purchase.Store
	Idempotency idempotency.Store
	// Outbox lists pending outbox rows (outbox.Store's Unpublished).
	Outbox OutboxLister
}

// OutboxLister is the part of outbox.Store the suite reads.
type OutboxLister interface {
	Unpublished(ctx context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error)
}

// MemoryPorts returns the ports of a fresh Memory.
func MemoryPorts(*testing.T) Ports {
	m := NewMemory()
	return Ports{Intensives: m.Intensives(), Purchases: m, Idempotency: m.Idempotency(), Outbox: m}
}

// Factory returns fresh, empty ports; it is called once per test case,
// from parallel tests.
type Factory func(t *testing.T) Ports

// Start is the instant the suites' clocks start at.
var Start = time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)

// Fixture is a purchase Service over one set of ports, with helpers for the
// facts the suites check. Tests of code built on the ports use it too.
type Fixture struct {
	T     *testing.T
	Ctx   context.Context
	Ports Ports
	Svc   *purchase.Service
	now   atomic.Int64 // unix nanoseconds
}

// Setup returns a Fixture over fresh ports, with a clock reading Start.
func Setup(t *testing.T, newPorts Factory) *Fixture {
	t.Helper()
	f := &Fixture{T: t, Ctx: context.Background(), Ports: newPorts(t)}
	f.now.Store(Start.UnixNano())
	svc, err := purchase.NewService(purchase.Deps{
		Intensives: f.Ports.Intensives, Store: f.Ports.Purchases, Idempotency: f.Ports.Idempotency, Now: f.Now,
	})
	require.NoError(t, err)
	f.Svc = svc
	return f
}

// Now is the fixture's clock.
func (f *Fixture) Now() time.Time { return time.Unix(0, f.now.Load()).UTC() }

// Advance moves the fixture's clock forward.
func (f *Fixture) Advance(d time.Duration) { f.now.Add(int64(d)) }

// Intensive creates an intensive with the given capacity (price 499.00 EUR,
// a 15-minute hold).
func (f *Fixture) Intensive(capacity int) purchase.Intensive {
	f.T.Helper()
	in, err := f.Svc.CreateIntensive(f.Ctx, purchase.CreateIntensiveRequest{
		TeacherID: "teacher-1", Title: "Go in a week", Capacity: capacity,
		Price: purchase.Price{AmountCents: 49900, Currency: "EUR"},
	})
	require.NoError(f.T, err)
	return in
}

// respond renders what the API would answer (202 with the purchase id), so
// a replay that returned a fresh rendering would be caught.
func respond(p purchase.Purchase) (idempotency.Response, error) {
	body, err := json.Marshal(map[string]any{
		"purchase_id": p.ID(), "status": p.Status(), "hold_expires_at": p.HoldExpiresAt(),
	})
	return idempotency.Response{Status: 202, Body: body}, err
}

// Request is a purchase request as the API would build it.
func (f *Fixture) Request(intensiveID, student, key string) purchase.PurchaseRequest {
	f.T.Helper()
	fp, err := idempotency.Fingerprint("POST", "/intensives/"+intensiveID+"/purchases", nil, student)
	require.NoError(f.T, err)
	return purchase.PurchaseRequest{
		IntensiveID: intensiveID, StudentID: student, IdempotencyKey: key, RequestFingerprint: fp, Respond: respond,
	}
}

// Buy starts a purchase and requires it to succeed.
func (f *Fixture) Buy(intensiveID, student string) purchase.Purchase {
	f.T.Helper()
	res, err := f.Svc.Purchase(f.Ctx, f.Request(intensiveID, student, "key-"+events.NewID()))
	require.NoError(f.T, err)
	require.False(f.T, res.Replayed)
	return res.Purchase
}

// Seats returns the intensive's (free, held, taken) counters and checks
// that they add up to the capacity.
func (f *Fixture) Seats(intensiveID string) (free, held, taken int) {
	f.T.Helper()
	in, err := f.Ports.Intensives.Get(f.Ctx, intensiveID)
	require.NoError(f.T, err)
	require.GreaterOrEqual(f.T, in.SeatsHeld(), 0)
	require.GreaterOrEqual(f.T, in.SeatsTaken(), 0)
	require.LessOrEqual(f.T, in.SeatsHeld()+in.SeatsTaken(), in.Capacity(), "never oversold")
	return in.SeatsFree(), in.SeatsHeld(), in.SeatsTaken()
}

// Purchase reads a purchase.
func (f *Fixture) Purchase(id string) purchase.Purchase {
	f.T.Helper()
	p, err := f.Ports.Purchases.Get(f.Ctx, id)
	require.NoError(f.T, err)
	return p
}

// Update applies a change and requires it to succeed.
func (f *Fixture) Update(id string, change func(*purchase.Purchase) error) purchase.Purchase {
	f.T.Helper()
	p, err := f.Ports.Purchases.Update(f.Ctx, id, change)
	require.NoError(f.T, err)
	return p
}

// RunStore checks purchase.Store and purchase.IntensiveRepository.
func RunStore(t *testing.T, newPorts Factory) {
	t.Run("create holds a seat and writes purchase, event and record together", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(2)
		got, err := f.Ports.Intensives.Get(f.Ctx, in.ID())
		require.NoError(t, err)
		require.Equal(t, in.Snapshot(), got.Snapshot())

		res, err := f.Svc.Purchase(f.Ctx, f.Request(in.ID(), "student-1", "key-00000001"))
		require.NoError(t, err)
		p := res.Purchase
		require.Equal(t, purchase.StatusReserved, p.Status())
		require.Equal(t, Start.Add(15*time.Minute), p.HoldExpiresAt())
		stored := f.Purchase(p.ID())
		require.True(t, p.Equal(stored), "stored %+v", stored.Snapshot())

		free, held, taken := f.Seats(in.ID())
		require.Equal(t, [3]int{1, 1, 0}, [3]int{free, held, taken})

		rec, err := f.Ports.Idempotency.Get(f.Ctx, "student-1", "key-00000001")
		require.NoError(t, err)
		require.Equal(t, p.ID(), rec.ResourceID)
		require.Equal(t, res.Response, rec.Response)
		requireRequestedEvent(t, f, p)
	})

	t.Run("same key replays without a second hold", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(5)
		first, err := f.Svc.Purchase(f.Ctx, f.Request(in.ID(), "student-1", "key-00000001"))
		require.NoError(t, err)
		again, err := f.Svc.Purchase(f.Ctx, f.Request(in.ID(), "student-1", "key-00000001"))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, first.Response, again.Response)
		_, held, _ := f.Seats(in.ID())
		require.Equal(t, 1, held)

		other := f.Request(in.ID(), "student-1", "key-00000001")
		other.RequestFingerprint = "another request"
		_, err = f.Svc.Purchase(f.Ctx, other)
		require.ErrorIs(t, err, club.ErrIdempotencyKeyReused)
	})

	t.Run("concurrent duplicates make one purchase", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(5)
		results := make([]purchase.PurchaseResult, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				res, err := f.Svc.Purchase(f.Ctx, f.Request(in.ID(), "student-1", "key-doubleclick"))
				require.NoError(t, err)
				results[i] = res
			})
		}
		wg.Wait()
		fresh := 0
		for _, r := range results {
			if !r.Replayed {
				fresh++
			}
			require.Equal(t, results[0].Response.Status, r.Response.Status)
		}
		require.Equal(t, 1, fresh)
		_, held, _ := f.Seats(in.ID())
		require.Equal(t, 1, held)
	})

	t.Run("unknown and full intensives", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		_, err := f.Svc.Purchase(f.Ctx, f.Request("i-missing", "student-1", "key-00000001"))
		require.ErrorIs(t, err, purchase.ErrIntensiveNotFound)
		require.ErrorIs(t, err, club.ErrNotFound)

		in := f.Intensive(1)
		f.Buy(in.ID(), "student-1")
		_, err = f.Svc.Purchase(f.Ctx, f.Request(in.ID(), "student-2", "key-00000002"))
		require.ErrorIs(t, err, purchase.ErrIntensiveFull)
		_, err = f.Ports.Idempotency.Get(f.Ctx, "student-2", "key-00000002")
		require.ErrorIs(t, err, club.ErrNotFound, "a refused purchase writes nothing")
	})

	t.Run("race for the last seat: holds never exceed capacity", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(3)
		f.Buy(in.ID(), "student-0")
		f.Buy(in.ID(), "student-1") // one seat left
		const racers = 20
		var won, full atomic.Int64
		var winner atomic.Value
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				res, err := f.Svc.Purchase(f.Ctx, f.Request(in.ID(), fmt.Sprintf("racer-%d", i), fmt.Sprintf("key-racer-%d", i)))
				switch {
				case err == nil:
					won.Add(1)
					winner.Store(res.Purchase.ID())
				case errors.Is(err, purchase.ErrIntensiveFull):
					full.Add(1)
				default:
					t.Errorf("racer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int64(1), won.Load(), "exactly one hold for the last seat")
		require.Equal(t, int64(racers-1), full.Load())
		free, held, taken := f.Seats(in.ID())
		require.Equal(t, [3]int{0, 3, 0}, [3]int{free, held, taken})

		// The winner's hold expires: the seat is free for the next student.
		id := winner.Load().(string)
		f.Update(id, func(p *purchase.Purchase) error { return p.Expire("no payment", f.Now()) })
		free, held, _ = f.Seats(in.ID())
		require.Equal(t, [2]int{1, 2}, [2]int{free, held})
		f.Buy(in.ID(), "racer-late")
		free, held, _ = f.Seats(in.ID())
		require.Equal(t, [2]int{0, 3}, [2]int{free, held})
	})

	t.Run("transitions carry their seat effects and history", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(2)
		p := f.Buy(in.ID(), "student-1")
		f.Advance(time.Second)
		f.Update(p.ID(), func(p *purchase.Purchase) error {
			return p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderPending, f.Now())
		})
		stored := f.Update(p.ID(), func(p *purchase.Purchase) error { return p.AttachTaskToken("token-1") })
		require.Equal(t, "token-1", f.Purchase(p.ID()).TaskToken())
		require.True(t, stored.Equal(f.Purchase(p.ID())))
		_, held, _ := f.Seats(in.ID())
		require.Equal(t, 1, held, "no seat change on the way to payment_pending")

		f.Advance(time.Second)
		f.Update(p.ID(), func(p *purchase.Purchase) error {
			if err := p.ObservePayment("pay_1", purchase.ProviderSucceeded); err != nil {
				return err
			}
			return p.Confirm(f.Now())
		})
		free, held, taken := f.Seats(in.ID())
		require.Equal(t, [3]int{1, 0, 1}, [3]int{free, held, taken})
		got := f.Purchase(p.ID())
		require.Equal(t, purchase.StatusConfirmed, got.Status())
		require.Empty(t, got.TaskToken())
		require.Equal(t, []purchase.HistoryEntry{
			{Status: purchase.StatusReserved, At: Start},
			{Status: purchase.StatusPaymentPending, At: Start.Add(time.Second)},
			{Status: purchase.StatusConfirmed, At: Start.Add(2 * time.Second)},
		}, got.History())

		// The same student pays for a second seat: access is granted once.
		q := f.Buy(in.ID(), "student-1")
		f.Update(q.ID(), func(p *purchase.Purchase) error {
			return p.RecordPayment("pay_2", "u", purchase.ProviderSucceeded, f.Now())
		})
		_, err := f.Ports.Purchases.Update(f.Ctx, q.ID(), func(p *purchase.Purchase) error { return p.Confirm(f.Now()) })
		require.ErrorIs(t, err, purchase.ErrAlreadyHasAccess)
		require.Equal(t, purchase.StatusPaymentPending, f.Purchase(q.ID()).Status(), "nothing written")
		free, held, taken = f.Seats(in.ID())
		require.Equal(t, [3]int{0, 1, 1}, [3]int{free, held, taken})

		// Refunding it gives the held seat back.
		f.Update(q.ID(), func(p *purchase.Purchase) error { return p.BeginRefund("already has access", f.Now()) })
		free, held, taken = f.Seats(in.ID())
		require.Equal(t, [3]int{1, 0, 1}, [3]int{free, held, taken})
	})

	t.Run("a late payment never changes the seat counters", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		f.Update(p.ID(), func(p *purchase.Purchase) error {
			return p.RecordPayment("pay_1", "u", purchase.ProviderPending, f.Now())
		})
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.Expire("no payment", f.Now()) })
		other := f.Buy(in.ID(), "student-2") // the seat went to someone else
		f.Update(other.ID(), func(p *purchase.Purchase) error {
			return p.RecordPayment("pay_2", "u", purchase.ProviderSucceeded, f.Now())
		})
		f.Update(other.ID(), func(p *purchase.Purchase) error { return p.Confirm(f.Now()) })
		before := [3]int{}
		before[0], before[1], before[2] = f.Seats(in.ID())

		for range 3 { // a late webhook, repeated
			f.Update(p.ID(), func(p *purchase.Purchase) error {
				if err := p.ObservePayment("pay_1", purchase.ProviderSucceeded); err != nil {
					return err
				}
				return p.BeginRefund("late", f.Now())
			})
		}
		f.Update(p.ID(), func(p *purchase.Purchase) error {
			if err := p.RecordRefund("re_1", purchase.ProviderSucceeded); err != nil {
				return err
			}
			return p.MarkRefunded(f.Now())
		})
		after := [3]int{}
		after[0], after[1], after[2] = f.Seats(in.ID())
		require.Equal(t, before, after)
		require.Equal(t, [3]int{0, 0, 1}, after)
		got := f.Purchase(p.ID())
		require.Equal(t, purchase.StatusRefunded, got.Status())
		require.True(t, got.LatePayment())
		require.Len(t, got.History(), 5, "reserved, payment_pending, expired, refund_pending, refunded: no repeats")
	})

	t.Run("concurrent repeats of one step release the seat once", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error { return p.Expire("no payment", f.Now()) })
				require.NoError(t, err)
			})
		}
		wg.Wait()
		free, held, taken := f.Seats(in.ID())
		require.Equal(t, [3]int{1, 0, 0}, [3]int{free, held, taken})
		require.Len(t, f.Purchase(p.ID()).History(), 2)
	})

	t.Run("a failed change writes nothing", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		boom := errors.New("boom")
		_, err := f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error {
			_ = p.Expire("half done", f.Now())
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, purchase.StatusReserved, f.Purchase(p.ID()).Status())
		_, held, _ := f.Seats(in.ID())
		require.Equal(t, 1, held)

		_, err = f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error { return p.StartChecking(f.Now()) })
		require.ErrorIs(t, err, purchase.ErrInvalidTransition)

		_, err = f.Ports.Purchases.Update(f.Ctx, "p-missing", func(*purchase.Purchase) error { return nil })
		require.ErrorIs(t, err, club.ErrNotFound)
		_, err = f.Ports.Purchases.Get(f.Ctx, "p-missing")
		require.ErrorIs(t, err, club.ErrNotFound)
	})

	t.Run("every field round-trips", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		f.Update(p.ID(), func(p *purchase.Purchase) error {
			return p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderSucceeded, f.Now())
		})
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.StartChecking(f.Now()) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.BeginRefund("cannot grant", f.Now()) })
		want := f.Update(p.ID(), func(p *purchase.Purchase) error { return p.RecordRefund("re_1", purchase.ProviderPending) })
		got := f.Purchase(p.ID())
		require.Equal(t, want.Snapshot(), got.Snapshot())
		require.Equal(t, "cannot grant", got.Note())
		require.Equal(t, purchase.ProviderPending, got.RefundStatus())
		require.False(t, got.LatePayment())

		// A failed refund and a person's second attempt: both attempts kept.
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.RecordRefund("re_1", purchase.ProviderFailed) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.NeedReconciliation("RefundFailed", f.Now()) })
		want = f.Update(p.ID(), func(p *purchase.Purchase) error {
			return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops-ann", Reason: "ticket 7"}, f.Now())
		})
		got = f.Purchase(p.ID())
		require.Equal(t, want.Snapshot(), got.Snapshot())
		require.Len(t, got.Refunds(), 2)
		require.Equal(t, purchase.ProviderFailed, got.Refunds()[0].Status)
		require.Equal(t, purchase.RefundKey(p.ID(), 2), got.RefundKey())
	})

	t.Run("a late payment's refund intent writes refund.requested with it", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.Expire("no payment", f.Now()) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.ObservePayment("pay-1", purchase.ProviderSucceeded) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.BeginRefund("late payment", f.Now()) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.BeginRefund("late payment", f.Now()) }) // a repeat
		rows := refundRows(t, f, p.ID())
		require.Len(t, rows, 1, "one row, committed with refund_pending")
		require.Equal(t, events.RefundRequested{PurchaseID: p.ID(), PaymentID: "pay-1", Reason: "late payment", Attempt: 1}, rows[0])
	})

	t.Run("a person's resolution moves the seat as its action says", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		// needs reconciliation while holding the seat, payment recorded as
		// succeeded (answer came after the saga gave up) or pending.
		handedOver := func(status purchase.ProviderStatus) (purchase.Intensive, purchase.Purchase) {
			in := f.Intensive(2)
			p := f.Buy(in.ID(), "student-"+string(status))
			f.Update(p.ID(), func(p *purchase.Purchase) error {
				return p.RecordPayment("pay-"+p.ID(), "http://checkout", purchase.ProviderPending, f.Now())
			})
			f.Update(p.ID(), func(p *purchase.Purchase) error { return p.StartChecking(f.Now()) })
			f.Update(p.ID(), func(p *purchase.Purchase) error { return p.NeedReconciliation("PaymentUnknown", f.Now()) })
			if status != purchase.ProviderPending {
				f.Update(p.ID(), func(p *purchase.Purchase) error { return p.ObservePayment("pay-"+p.ID(), status) })
			}
			return in, p
		}
		resolve := func(p purchase.Purchase, a purchase.Action, force bool) (purchase.Purchase, error) {
			return f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error {
				return p.Resolve(purchase.Resolution{Action: a, By: "ops-ann", Reason: "ticket 7", Force: force}, f.Now())
			})
		}
		seats := func(in purchase.Intensive) [3]int {
			free, held, taken := f.Seats(in.ID())
			return [3]int{free, held, taken}
		}

		in, p := handedOver(purchase.ProviderPending)
		got, err := resolve(p, purchase.ActionRelease, false)
		require.NoError(t, err)
		require.Equal(t, purchase.StatusExpired, got.Status())
		require.Equal(t, [3]int{2, 0, 0}, seats(in), "release frees the hold")
		last := got.History()[len(got.History())-1]
		require.Equal(t, purchase.HistoryEntry{Status: purchase.StatusExpired, At: f.Now(), By: "ops-ann", Reason: "ticket 7"}, last)
		require.True(t, got.Equal(f.Purchase(p.ID())), "stored as returned, history included")
		again, err := resolve(p, purchase.ActionRelease, false)
		require.NoError(t, err, "the same resolution again")
		require.True(t, again.Equal(got))
		_, err = resolve(p, purchase.ActionConfirm, true)
		require.ErrorIs(t, err, purchase.ErrNotReconcilable)
		require.Equal(t, [3]int{2, 0, 0}, seats(in))

		in, p = handedOver(purchase.ProviderSucceeded)
		_, err = resolve(p, purchase.ActionRelease, false)
		require.ErrorIs(t, err, purchase.ErrContradicted, "release after a recorded successful payment")
		require.Equal(t, purchase.StatusNeedsReconciliation, f.Purchase(p.ID()).Status())
		require.Equal(t, [3]int{1, 1, 0}, seats(in))
		got, err = resolve(p, purchase.ActionConfirm, false)
		require.NoError(t, err)
		require.Equal(t, purchase.StatusConfirmed, got.Status())
		require.Equal(t, [3]int{1, 0, 1}, seats(in), "confirm takes the held seat")

		in, p = handedOver(purchase.ProviderSucceeded)
		got, err = resolve(p, purchase.ActionRefund, false)
		require.NoError(t, err)
		require.Equal(t, purchase.StatusRefundPending, got.Status())
		require.Equal(t, [3]int{2, 0, 0}, seats(in), "refund frees the hold")
		rows := refundRows(t, f, p.ID())
		require.Len(t, rows, 1)
		require.Equal(t, "pay-"+p.ID(), rows[0].PaymentID)
		require.Equal(t, "a person's decision (clubctl reconcile resolve)", rows[0].Reason, "no operator, no free text in the outbox")

		in, p = handedOver(purchase.ProviderFailed)
		_, err = resolve(p, purchase.ActionRefund, false)
		require.ErrorIs(t, err, purchase.ErrContradicted, "nothing to refund for a failed payment")
		_, err = resolve(p, purchase.ActionConfirm, false)
		require.ErrorIs(t, err, purchase.ErrContradicted, "no access without payment")
		require.Empty(t, refundRows(t, f, p.ID()))
		got, err = resolve(p, purchase.ActionRelease, false)
		require.NoError(t, err)
		require.Equal(t, [3]int{2, 0, 0}, seats(in))

		in, p = handedOver(purchase.ProviderPending)
		got, err = resolve(p, purchase.ActionConfirm, true)
		require.NoError(t, err, "forced: the person saw the money at the provider")
		require.Equal(t, purchase.StatusConfirmed, got.Status())
		require.Equal(t, purchase.ProviderPending, got.PaymentStatus(), "the recorded answer stays what the provider said")
		require.Equal(t, [3]int{1, 0, 1}, seats(in))
	})

	t.Run("a purchase that gave its seat back cannot take one when resolved", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		in := f.Intensive(1)
		p := f.Buy(in.ID(), "student-1")
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.Expire("no payment", f.Now()) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.ObservePayment("pay-1", purchase.ProviderSucceeded) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.BeginRefund("late payment", f.Now()) })
		f.Update(p.ID(), func(p *purchase.Purchase) error { return p.NeedReconciliation("RefundFailed", f.Now()) })
		_, err := f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error {
			return p.Resolve(purchase.Resolution{Action: purchase.ActionConfirm, By: "ops", Reason: "x", Force: true}, f.Now())
		})
		require.ErrorIs(t, err, purchase.ErrNoHold)
		got, err := f.Ports.Purchases.Update(f.Ctx, p.ID(), func(p *purchase.Purchase) error {
			return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops", Reason: "refund again"}, f.Now())
		})
		require.NoError(t, err)
		require.Equal(t, purchase.StatusRefundPending, got.Status())
		free, held, taken := f.Seats(in.ID())
		require.Equal(t, [3]int{1, 0, 0}, [3]int{free, held, taken}, "nothing to release")
		rows := refundRows(t, f, p.ID())
		require.Len(t, rows, 2)
		attempts := []int{rows[0].Attempt, rows[1].Attempt}
		require.ElementsMatch(t, []int{1, 2}, attempts, "the second refund runs in an execution of its own")
	})
}

// refundRows returns the refund.requested rows about a purchase.
func refundRows(t *testing.T, f *Fixture, purchaseID string) []events.RefundRequested {
	t.Helper()
	all, err := f.Ports.Outbox.Unpublished(f.Ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	require.NoError(t, err)
	var out []events.RefundRequested
	for _, r := range all {
		if r.AggregateID != purchaseID || r.Type != events.TypeRefundRequested {
			continue
		}
		env, err := r.Envelope()
		require.NoError(t, err)
		rr, err := env.RefundRequested()
		require.NoError(t, err)
		out = append(out, rr)
	}
	return out
}

// requireRequestedEvent checks the purchase.requested outbox row of p.
func requireRequestedEvent(t *testing.T, f *Fixture, p purchase.Purchase) {
	t.Helper()
	all, err := f.Ports.Outbox.Unpublished(f.Ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	require.NoError(t, err)
	var rows []outbox.Row
	for _, r := range all {
		if r.AggregateID == p.ID() {
			rows = append(rows, r)
		}
	}
	require.Len(t, rows, 1)
	env, err := rows[0].Envelope()
	require.NoError(t, err)
	data, err := env.PurchaseRequested()
	require.NoError(t, err)
	require.Equal(t, events.PurchaseRequested{
		PurchaseID: p.ID(), IntensiveID: p.IntensiveID(), StudentID: p.StudentID(),
		AmountCents: 49900, Currency: "EUR", HoldExpiresAt: p.HoldExpiresAt(),
	}, data)
	require.Equal(t, outbox.StatusPending, rows[0].Status)
}
