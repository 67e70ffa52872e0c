package inbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	rec := inbox.NewRecord("analytics", env, time.Now())
	require.Equal(t, env.Fingerprint(), rec.Fingerprint)

	err = rec.Check(env.Fingerprint())
	require.ErrorIs(t, err, inbox.ErrDuplicate)
	require.NotErrorIs(t, err, inbox.ErrContractConflict)

	err = rec.Check("other")
	require.ErrorIs(t, err, inbox.ErrContractConflict)
	require.NotErrorIs(t, err, inbox.ErrDuplicate)
	require.Contains(t, err.Error(), rec.Fingerprint, "the reason names both fingerprints")
	require.Contains(t, err.Error(), "other")
}

func TestValidateConsumer(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"roster", "analytics", "notifier-v2", "a_b"} {
		require.NoError(t, inbox.ValidateConsumer(ok), ok)
	}
	for _, bad := range []string{"", "Roster", "a#b", "with space"} {
		require.Error(t, inbox.ValidateConsumer(bad), bad)
	}
}
