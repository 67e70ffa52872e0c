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

// MarkAllPublished marks a relay batch with BatchWriteItem, 25 rows per
// call and no transaction, leaving each row as MarkPublished would; a row
// already marked (the sweeper was first) is marked again without an error.
func TestMarkAllPublishedInBatches(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingWrites{DynamoDB: client}
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	c, err := class.New(events.NewID(), "teacher-1", "Go", 1000, startsAt)
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))
	student := 0
	putRows := func(n int) []outbox.Row {
		rows := make([]outbox.Row, n)
		for i := range rows {
			student++
			sid := fmt.Sprintf("student-%d", student)
			e, err := enrollment.New(events.NewID(), c.ID(), sid, "teacher-1", at)
			require.NoError(t, err)
			env, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: sid})
			require.NoError(t, err)
			require.NoError(t, st.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
				Caller: sid, Key: "key-00000001", Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: at,
			}}))
			rows[i], err = st.Outbox.Get(ctx, env.EventID)
			require.NoError(t, err)
			require.Equal(t, outbox.StatusPending, rows[i].Status)
		}
		db.transactions.Store(0)
		db.batches.Store(0)
		return rows
	}
	rows := putRows(60)
	marked := at.Add(time.Second)
	require.NoError(t, st.Outbox.MarkAllPublished(ctx, rows, marked))
	require.EqualValues(t, 3, db.batches.Load(), "25 + 25 + 10 rows")
	require.Zero(t, db.transactions.Load(), "marks are not transactional")
	for _, want := range rows {
		row, err := st.Outbox.Get(ctx, want.EventID)
		require.NoError(t, err)
		want.Status, want.PublishedAt = outbox.StatusPublished, marked
		require.Equal(t, want, row, "the row as published, nothing else changed")
	}
	pending, err := st.Outbox.Unpublished(ctx, at.Add(time.Hour), 1000)
	require.NoError(t, err)
	require.Empty(t, pending, "out of the unpublished index")

	more := putRows(3)
	require.NoError(t, st.Outbox.MarkPublished(ctx, more[1].EventID, at)) // the sweeper was first
	require.NoError(t, st.Outbox.MarkAllPublished(ctx, more, marked), "marking again is harmless")
	for _, r := range more {
		row, err := st.Outbox.Get(ctx, r.EventID)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusPublished, row.Status)
	}
	pending, err = st.Outbox.Unpublished(ctx, at.Add(time.Hour), 1000)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// countingWrites counts TransactWriteItems and BatchWriteItem calls.
type countingWrites struct {
	store.DynamoDB
	transactions, batches atomic.Int32
}

func (c *countingWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.transactions.Add(1)
	return c.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

func (c *countingWrites) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.batches.Add(1)
	return c.DynamoDB.BatchWriteItem(ctx, in, opts...)
}
