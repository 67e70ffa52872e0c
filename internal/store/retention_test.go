package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/store"
)

// Under the at_enrollment address policy the address copied onto the
// enrollment stays only until the mail is sent: the write that records
// sent removes it, and no other request is made for it. A failed mail keeps
// it so that a redriven dead letter can still be sent.
func TestCapturedAddressIsErasedWithTheSentNotificationStatus(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &countingDB{DynamoDB: client}
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	ctx := context.Background()
	c, err := class.New(events.NewID(), "teacher-1", "Go", 10, startsAt)
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))

	enroll := func(student string) string {
		e, err := enrollment.New(events.NewID(), c.ID(), student, "teacher-1", time.Now())
		require.NoError(t, err)
		e.CaptureAddress(student + "@example.com")
		env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: student})
		require.NoError(t, err)
		require.NoError(t, st.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
			Caller: student, Key: "key-" + student, Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: time.Now(),
		}}))
		return e.ID()
	}
	// stored reads the item itself: the attribute, not the domain's view.
	stored := func(id string) map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cfg.ClubTable), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ENROLLMENT#" + id}, "sk": &types.AttributeValueMemberS{Value: "ENROLLMENT"}}})
		require.NoError(t, err)
		require.NotEmpty(t, out.Item, "enrollment %s", id)
		return out.Item
	}
	change := func(id string, ch enrollment.NotificationChange) enrollment.Enrollment {
		e, err := st.Enrollments.ChangeNotification(ctx, id, ch)
		require.NoError(t, err)
		return e
	}

	tests := []struct {
		name  string
		steps []enrollment.NotificationChange
		want  enrollment.NotificationStatus
		kept  bool
	}{
		{"attempt in progress", []enrollment.NotificationChange{enrollment.BeginAttemptChange()}, enrollment.NotificationPending, true},
		{"result unknown", []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.UnknownChange()}, enrollment.NotificationUnknown, true},
		{"sent", []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.SentChange(time.Now())}, enrollment.NotificationSent, false},
		{"failed", []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.FailedChange()}, enrollment.NotificationFailed, true},
		{"given up", []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.GiveUpChange()}, enrollment.NotificationFailed, true},
		{"sent after unknown", []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.UnknownChange(),
			enrollment.BeginAttemptChange(), enrollment.SentChange(time.Now())}, enrollment.NotificationSent, false},
	}
	for i, tt := range tests {
		id := enroll("student-" + string(rune('a'+i)))
		require.Equal(t, &types.AttributeValueMemberS{Value: "student-" + string(rune('a'+i)) + "@example.com"}, stored(id)["captured_email"], tt.name)
		for _, step := range tt.steps[:len(tt.steps)-1] {
			change(id, step)
		}
		updates, gets := db.updates.Load(), db.gets.Load()
		last := change(id, tt.steps[len(tt.steps)-1])
		require.EqualValues(t, 1, db.updates.Load()-updates, "%s: the status and the erasure in one write", tt.name)
		require.Equal(t, gets, db.gets.Load(), "%s: no read", tt.name)
		item := stored(id)
		require.Equal(t, &types.AttributeValueMemberS{Value: string(tt.want)}, item["notification_status"], tt.name)
		if tt.kept {
			require.Contains(t, item, "captured_email", "%s: still needed to send or to resend", tt.name)
			require.Equal(t, "student-"+string(rune('a'+i))+"@example.com", last.CapturedAddress(), tt.name)
		} else {
			require.NotContains(t, item, "captured_email", tt.name)
			require.Empty(t, last.CapturedAddress(), "%s: the answer is the item as stored", tt.name)
		}
	}
}
