package enrollment_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/store/memstore"
)

// countingClasses counts class reads.
type countingClasses struct {
	enrollment.ClassFinder
	reads atomic.Int32
}

func (c *countingClasses) Get(ctx context.Context, id string) (class.Class, error) {
	c.reads.Add(1)
	return c.ClassFinder.Get(ctx, id)
}

// A class is read once a minute, not once per enrollment: enrollment uses
// only what never changes, and the seat is still the transaction's.
func TestEnrollReadsAClassOncePerMinute(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	classes := &countingClasses{ClassFinder: mem.Classes}
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: mem.Enrollments, Classes: classes, Idempotency: mem.Idempotency,
		Now: func() time.Time { return now },
	})
	require.NoError(t, err)
	c, err := class.New("c-1", "teacher-1", "Go", 2, now.Add(24*time.Hour))
	require.NoError(t, err)
	ctx := context.Background()

	_, err = svc.Enroll(ctx, request("s-0", "key-00000000"))
	require.ErrorIs(t, err, club.ErrClassNotFound)
	require.NoError(t, mem.Classes.Create(ctx, c))
	_, err = svc.Enroll(ctx, request("s-1", "key-00000001"))
	require.NoError(t, err, "a class not found is not remembered")
	_, err = svc.Enroll(ctx, request("s-2", "key-00000002"))
	require.NoError(t, err)
	require.EqualValues(t, 2, classes.reads.Load())

	_, err = svc.Enroll(ctx, request("s-3", "key-00000003"))
	require.ErrorIs(t, err, club.ErrClassFull, "the cached class does not decide seats")

	now = now.Add(61 * time.Second)
	_, err = svc.Enroll(ctx, request("s-4", "key-00000004"))
	require.ErrorIs(t, err, club.ErrClassFull)
	require.EqualValues(t, 3, classes.reads.Load(), "read again after a minute")
}
