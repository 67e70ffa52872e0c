package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/store"
)

// A Lambda batch of ten enrollment events is one TransactWriteItems for the
// analytics consumer and one for the roster's, and nothing is read.
func TestApplyAllOnceIsOneTransactionPerBatch(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingDB{DynamoDB: client}
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	ctx := context.Background()

	var envs []events.Envelope
	for i := range 10 {
		env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{
			EnrollmentID: fmt.Sprintf("e-%d", i), ClassID: fmt.Sprintf("c-%d", i%3), StudentID: fmt.Sprintf("s-%d", i),
		})
		require.NoError(t, err)
		envs = append(envs, env)
	}
	for _, p := range []*projection.Projector{projection.NewStatsProjector(st.Inbox), projection.NewRosterProjector(st.Inbox)} {
		require.Equal(t, make([]error, len(envs)), p.ApplyAll(ctx, envs), p.Consumer())
	}
	require.EqualValues(t, 2, db.transacts.Load())
	require.Zero(t, db.gets.Load())

	var total int64
	for c := range 3 {
		s, err := st.Projections.Stats(ctx, fmt.Sprintf("c-%d", c))
		require.NoError(t, err)
		total += s.EnrollmentsTotal
	}
	require.EqualValues(t, 10, total)
}
