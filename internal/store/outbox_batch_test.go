package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store"
)

var _ relay.BatchMarker = (*store.Outbox)(nil)

// MarkAllPublished marks a relay batch in transactions of up to 100 rows;
// a transaction with a row that is not pending writes nothing.
func TestMarkAllPublishedInTransactions(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingTransactions{DynamoDB: client}
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	c, err := class.New(events.NewID(), "teacher-1", "Go", 1000, startsAt)
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))
	student := 0
	putRows := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			student++
			sid := fmt.Sprintf("student-%d", student)
			e, err := enrollment.New(events.NewID(), c.ID(), sid, "teacher-1", at)
			require.NoError(t, err)
			env, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: sid})
			require.NoError(t, err)
			require.NoError(t, st.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
				Caller: sid, Key: "key-00000001", Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: at,
			}}))
			ids[i] = env.EventID
		}
		db.transactions.Store(0)
		return ids
	}
	ids := putRows(150)
	require.NoError(t, st.Outbox.MarkAllPublished(ctx, ids, at.Add(time.Second)))
	require.EqualValues(t, 2, db.transactions.Load(), "100 + 50 rows")
	for _, id := range ids {
		row, err := st.Outbox.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusPublished, row.Status)
	}
	pending, err := st.Outbox.Unpublished(ctx, at.Add(time.Hour), 1000)
	require.NoError(t, err)
	require.Empty(t, pending, "out of the unpublished index")

	more := putRows(3)
	require.NoError(t, st.Outbox.MarkPublished(ctx, more[1], at)) // the sweeper was first
	require.Error(t, st.Outbox.MarkAllPublished(ctx, more, at))
	for _, id := range []string{more[0], more[2]} {
		row, err := st.Outbox.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusPending, row.Status, "a cancelled transaction writes nothing")
	}
}

// countingTransactions counts TransactWriteItems calls.
type countingTransactions struct {
	store.DynamoDB
	transactions atomic.Int32
}

func (c *countingTransactions) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.transactions.Add(1)
	return c.DynamoDB.TransactWriteItems(ctx, in, opts...)
}
