package outage_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestOutage: a 1-hour outage with 1,000 mails pending (virtual time). The
// new way costs at most 30 AWS requests per pending mail per hour, twenty
// times fewer than the old; either way every mail is sent exactly once and
// nothing is dead-lettered, and the new way sends them all within a minute
// of the recovery, with each enrollment's attempts equal to the calls that
// reached the provider for it. (The old way's cost per mail does not depend
// on the backlog; it runs with 100 mails here, to keep the test quick, and
// with 1,000 in the benchmark.)
func TestOutage(t *testing.T) {
	t.Parallel()
	old := simulate(t, false, 100, time.Hour)
	parked := simulate(t, true, 1000, time.Hour)
	t.Logf("old: %.1f requests/mail/h (%+v), drain %s", old.PerMailHour(), old.During, old.Drain)
	t.Logf("new: %.1f requests/mail/h (%+v), drain %s, parked %d", parked.PerMailHour(), parked.During, parked.Drain, parked.Parked)
	for _, r := range []Result{old, parked} {
		require.Equal(t, r.Mails, r.Sent, "%s: every mail sent", r.Way)
		require.Zero(t, r.Dups, "%s: each mail once", r.Way)
		require.Zero(t, r.Dead, "%s: nothing dead-lettered", r.Way)
	}
	require.LessOrEqual(t, parked.PerMailHour(), 30.0)
	require.GreaterOrEqual(t, old.PerMailHour()/parked.PerMailHour(), 20.0, "twentyfold fewer")
	require.LessOrEqual(t, parked.Drain, time.Minute, "all sent within a minute of the recovery")
	require.True(t, parked.AttemptsMatch, "attempts count calls to the provider")
	require.Equal(t, 2*parked.Provider, parked.During.DynamoDBWrites, "during the outage, the only writes are the probes' (the attempt, then its error)")
	require.GreaterOrEqual(t, parked.Parked, parked.Mails-instances, "all wait parked but the mails that probe, one an instance at most")
}
