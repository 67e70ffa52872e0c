package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/store"
)

// countingDB counts reads, updates and transactions.
type countingDB struct {
	store.DynamoDB
	gets, batchGets, updates, transacts atomic.Int32
	transactItems                       atomic.Int32 // items of all transactions
}

func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.batchGets.Add(1)
	return c.DynamoDB.BatchGetItem(ctx, in, opts...)
}

func (c *countingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.transacts.Add(1)
	c.transactItems.Add(int32(len(in.TransactItems)))
	return c.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.DynamoDB.GetItem(ctx, in, opts...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

// The notifier's attempt and its outcome cost one conditional write each and
// no read; only a change whose cases all fail reads, to say why.
func TestChangeNotificationWritesOncePerStepWithoutReading(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingDB{DynamoDB: client}
	notifier, err := store.New(db, cfg)
	require.NoError(t, err)
	other, err := store.New(client, cfg) // another process
	require.NoError(t, err)
	ctx := context.Background()

	e := storedEnrollment(t, other)

	got, err := notifier.Enrollments.ChangeNotification(ctx, e.ID(), enrollment.BeginAttemptChange())
	require.NoError(t, err)
	require.Equal(t, 1, got.Notification().Attempts())
	require.Equal(t, e.ClassID(), got.ClassID(), "the enrollment as stored")
	sentAt := time.Date(2026, 3, 1, 10, 0, 1, 0, time.UTC)
	got, err = notifier.Enrollments.ChangeNotification(ctx, e.ID(), enrollment.SentChange(sentAt))
	require.NoError(t, err)
	require.Equal(t, enrollment.NotificationSent, got.Notification().Status())
	require.EqualValues(t, 0, db.gets.Load(), "no read")
	require.EqualValues(t, 2, db.updates.Load(), "one write per step")

	// A redelivery after the mail was recorded: the attempt's condition
	// fails, one read says why.
	_, err = notifier.Enrollments.ChangeNotification(ctx, e.ID(), enrollment.BeginAttemptChange())
	require.ErrorIs(t, err, enrollment.ErrAlreadySent)
	require.EqualValues(t, 1, db.gets.Load())
	require.EqualValues(t, 4, db.updates.Load(), "both cases of the attempt tried, neither written")
	stored, err := other.Enrollments.Get(ctx, e.ID())
	require.NoError(t, err)
	require.Equal(t, 1, stored.Notification().Attempts())
	require.True(t, sentAt.Equal(stored.Notification().SentAt()))
}

// storedEnrollment creates a class and an enrollment in it with s.
func storedEnrollment(t *testing.T, s *store.Store) enrollment.Enrollment {
	t.Helper()
	ctx := context.Background()
	c, err := class.New(events.NewID(), "teacher-1", "Go", 3, startsAt)
	require.NoError(t, err)
	require.NoError(t, s.Classes.Create(ctx, c))
	e, err := enrollment.New(events.NewID(), c.ID(), "student-1", "teacher-1", time.Now())
	require.NoError(t, err)
	env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: "student-1"})
	require.NoError(t, err)
	require.NoError(t, s.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
		Caller: "student-1", Key: "key-" + e.ID(), Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: time.Now(),
	}}))
	return e
}

// An attempt whose write's answer was lost is counted once: the SDK's
// retry of the write is carried out again, and meets the token the first
// run wrote. The next attempt counts again.
func TestAttemptWhoseAnswerWasLostCountsOnce(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &lostAnswer{DynamoDB: client}
	notifier, err := store.New(db, cfg)
	require.NoError(t, err)
	other, err := store.New(client, cfg)
	require.NoError(t, err)
	ctx := context.Background()

	e := storedEnrollment(t, other)

	for want := 1; want <= 2; want++ {
		got, err := notifier.Enrollments.ChangeNotification(ctx, e.ID(), enrollment.BeginAttemptChange())
		require.NoError(t, err)
		require.Equal(t, want, got.Notification().Attempts(), "attempt %d", want)
		stored, err := other.Enrollments.Get(ctx, e.ID())
		require.NoError(t, err)
		require.Equal(t, want, stored.Notification().Attempts(), "attempt %d, as stored", want)
	}
}
