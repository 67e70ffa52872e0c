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

// countingDB counts reads and updates of items.
type countingDB struct {
	store.DynamoDB
	gets, updates atomic.Int32
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.DynamoDB.GetItem(ctx, in, opts...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

// The notifier's attempt and its outcome cost one read between them, not
// two; a change made elsewhere in between is read, never overwritten.
func TestUpdateNotificationReadsOncePerAttemptAndOutcome(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingDB{DynamoDB: client}
	notifier, err := store.New(db, cfg)
	require.NoError(t, err)
	other, err := store.New(client, cfg) // another process
	require.NoError(t, err)
	ctx := context.Background()

	c, err := class.New(events.NewID(), "teacher-1", "Go", 3, startsAt)
	require.NoError(t, err)
	require.NoError(t, other.Classes.Create(ctx, c))
	e, err := enrollment.New(events.NewID(), c.ID(), "student-1", "teacher-1", time.Now())
	require.NoError(t, err)
	env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: "student-1"})
	require.NoError(t, err)
	require.NoError(t, other.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
		Caller: "student-1", Key: "key-00000001", Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: time.Now(),
	}}))

	got, err := notifier.Enrollments.UpdateNotification(ctx, e.ID(), (*enrollment.Notification).BeginAttempt)
	require.NoError(t, err)
	require.Equal(t, 1, got.Notification().Attempts())
	require.EqualValues(t, 1, db.gets.Load())

	sentAt := time.Date(2026, 3, 1, 10, 0, 1, 0, time.UTC)
	got, err = notifier.Enrollments.UpdateNotification(ctx, e.ID(), func(n *enrollment.Notification) error { n.MarkSent(sentAt); return nil })
	require.NoError(t, err)
	require.EqualValues(t, 1, db.gets.Load(), "the outcome starts from the attempt just written")
	require.EqualValues(t, 2, db.updates.Load())
	require.Equal(t, enrollment.NotificationSent, got.Notification().Status())
	require.Equal(t, e.ClassID(), got.ClassID(), "the enrollment as stored")
	stored, err := other.Enrollments.Get(ctx, e.ID())
	require.NoError(t, err)
	require.Equal(t, enrollment.NotificationSent, stored.Notification().Status())
	require.Equal(t, 1, stored.Notification().Attempts())

	// A second enrollment: another process changes it between the attempt
	// and the outcome; the remembered version no longer holds.
	e2, err := enrollment.New(events.NewID(), c.ID(), "student-2", "teacher-1", time.Now())
	require.NoError(t, err)
	env2, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: e2.ID(), ClassID: c.ID(), StudentID: "student-2"})
	require.NoError(t, err)
	require.NoError(t, other.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e2, Event: env2, Idempotency: idempotency.Record{
		Caller: "student-2", Key: "key-00000002", Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: time.Now(),
	}}))
	_, err = notifier.Enrollments.UpdateNotification(ctx, e2.ID(), (*enrollment.Notification).BeginAttempt)
	require.NoError(t, err)
	_, err = other.Enrollments.UpdateNotification(ctx, e2.ID(), (*enrollment.Notification).BeginAttempt)
	require.NoError(t, err)
	gets := db.gets.Load()
	got, err = notifier.Enrollments.UpdateNotification(ctx, e2.ID(), (*enrollment.Notification).BeginAttempt)
	require.NoError(t, err)
	require.Equal(t, gets+1, db.gets.Load(), "the failed condition made it read")
	require.Equal(t, 3, got.Notification().Attempts(), "no attempt lost")
}
