package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
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

// TestSweeperIndexHoldsOnlyUnpublishedRows checks, on the engine of the
// pass, what the outbox sweeper relies on: the "unpublished" index is
// sparse (a published row, which has lost unpublished_shard, is not in it),
// and each shard of it is in created_at order, so that the sweeper's query
// with Limit returns the oldest unpublished rows and never a published one.
// The rows are written newest first, so that an index kept in any other
// order (the order of writes, of event ids) gives other rows.
func TestSweeperIndexHoldsOnlyUnpublishedRows(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const rows = 24
	var tick atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(rows-tick.Add(1)) * time.Minute) }
	st, cfg := newStore(t, store.Config{})
	ctx := context.Background()
	c, err := class.New(events.NewID(), "teacher-1", "Go", rows, startsAt)
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))
	svc, err := enrollment.NewService(enrollment.Deps{Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency, Now: clock})
	require.NoError(t, err)
	for i := range rows {
		student := fmt.Sprintf("student-%02d", i)
		fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, student)
		require.NoError(t, err)
		_, err = svc.Enroll(ctx, enrollment.EnrollRequest{
			ClassID: c.ID(), StudentID: student, IdempotencyKey: fmt.Sprintf("key-%08d", i), RequestFingerprint: fp,
			Respond: func(e enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201, Body: []byte(`{}`)}, nil
			},
		})
		require.NoError(t, err)
	}
	farFuture := base.Add(24 * time.Hour)
	all, err := st.Outbox.Unpublished(ctx, farFuture, 100)
	require.NoError(t, err)
	require.Len(t, all, rows)

	// Publish the oldest row and two others: they leave the index.
	published := map[string]bool{}
	for _, r := range []int{0, 3, 10} {
		require.NoError(t, st.Outbox.MarkPublished(ctx, all[r].EventID, base))
		published[all[r].EventID] = true
	}
	var pending []string
	for _, r := range all {
		if !published[r.EventID] {
			pending = append(pending, r.EventID)
		}
	}

	// The index itself, read as any client reads it: only pending rows.
	var scanned []string
	in := &dynamodb.ScanInput{TableName: aws.String(cfg.OutboxTable), IndexName: aws.String("unpublished")}
	for {
		out, err := client.Scan(ctx, in)
		require.NoError(t, err)
		for _, it := range out.Items {
			require.Contains(t, it, "unpublished_shard")
			require.Equal(t, &types.AttributeValueMemberS{Value: "pending"}, it["status"])
			scanned = append(scanned, it["event_id"].(*types.AttributeValueMemberS).Value)
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	require.ElementsMatch(t, pending, scanned, "the index holds exactly the unpublished rows")

	// The sweeper's query: the oldest unpublished rows, for every limit.
	for limit := 1; limit <= 6; limit++ {
		got, err := st.Outbox.Unpublished(ctx, farFuture, limit)
		require.NoError(t, err)
		ids := make([]string, 0, len(got))
		for _, r := range got {
			ids = append(ids, r.EventID)
		}
		require.Equal(t, pending[:limit], ids, "the %d oldest unpublished rows", limit)
	}
}
