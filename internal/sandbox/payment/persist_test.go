package payment_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sandbox/payment"
)

// The local cloud keeps the sandbox's State across a restart: payments and
// their keys, refunds (a pending one still settles after the restart, with
// its webhook), webhook events, and the faults in force.
func TestStateSurvivesARestart(t *testing.T) {
	before := setup(t, payment.Options{RefundDelay: 2 * time.Second})
	revs := []string{before.srv.Revision()}
	paid := before.paidPayment(t, "purchase-1")
	revs = append(revs, before.srv.Revision())
	pending := before.createPayment(t, "pay-purchase-2", "purchase-2").str("payment_id")
	revs = append(revs, before.srv.Revision())
	require.Equal(t, revs[2], before.srv.Revision())
	for i := 1; i < len(revs); i++ {
		require.NotEqual(t, revs[i-1], revs[i], "every change changes the revision")
	}
	rf := before.refund(t, "refund-purchase-1", paid)
	require.Equal(t, http.StatusCreated, rf.status, "%v", rf.body)
	before.control(t, "/_sandbox/faults", `{"mode":"refund_unavailable"}`)
	// The receiver has the payment's event, but the sandbox records the
	// delivery only when the answer is back: a snapshot taken in between
	// rightly delivers it again after the restart, which is not the case
	// under test.
	require.Eventually(t, func() bool {
		for _, e := range before.srv.State().Events {
			if e.Delivered == 0 {
				return false
			}
		}
		return true
	}, waitFor, time.Millisecond, "the sandbox has recorded the delivery of every event")

	raw, err := json.Marshal(before.srv.State())
	require.NoError(t, err)
	var st payment.State
	require.NoError(t, json.Unmarshal(raw, &st))
	require.Len(t, st.Events, 1)

	after := setup(t, payment.Options{RefundDelay: 2 * time.Second})
	after.srv.Restore(st)
	got, ok := after.srv.Payment(paid)
	require.True(t, ok)
	require.Equal(t, payment.StatusSucceeded, got.Status)
	require.Equal(t, pending, after.createPayment(t, "pay-purchase-2", "purchase-2").str("payment_id"),
		"a repeated request finds the payment made before the restart")
	require.Equal(t, http.StatusServiceUnavailable, after.refund(t, "refund-purchase-9", paid).status, "the fault is still on")
	require.Empty(t, after.receiver.got(), "an event delivered before the restart is not sent again")

	after.clock.Advance(2 * time.Second)
	d := after.receiver.waitDeliveries(t, 1)
	require.Equal(t, payment.EventRefundSucceeded, d[0].event.Type)
	require.Equal(t, rf.str("refund_id"), d[0].event.RefundID)
	after.verify(t, d[0])
	refunds := after.srv.Refunds(paid)
	require.Len(t, refunds, 1)
	require.Equal(t, payment.StatusSucceeded, refunds[0].Status)
}
