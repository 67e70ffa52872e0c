package purchase_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
)

func TestServiceVisibilityAndValidation(t *testing.T) {
	t.Parallel()
	f := purchasetest.Setup(t, purchasetest.MemoryPorts)
	in := f.Intensive(2)
	got, err := f.Svc.GetIntensive(f.Ctx, in.ID())
	require.NoError(t, err)
	require.Equal(t, in.Snapshot(), got.Snapshot())
	_, err = f.Svc.GetIntensive(f.Ctx, "i-missing")
	require.ErrorIs(t, err, purchase.ErrIntensiveNotFound)

	p := f.Buy(in.ID(), "student-1")
	mine, err := f.Svc.Get(f.Ctx, p.ID(), "student-1")
	require.NoError(t, err)
	require.Equal(t, p.ID(), mine.ID())
	for _, caller := range []string{"student-2", "teacher-1", ""} {
		_, err = f.Svc.Get(f.Ctx, p.ID(), caller)
		require.ErrorIs(t, err, club.ErrNotFound, "a purchase is visible to its student only (%q)", caller)
	}

	_, err = f.Svc.CreateIntensive(f.Ctx, purchase.CreateIntensiveRequest{TeacherID: "teacher-1", Title: "x", Capacity: 1,
		Price: purchase.Price{AmountCents: 1, Currency: "EUR"}, HoldSeconds: 4})
	var ve *club.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "hold_seconds", ve.Field)

	bad := f.Request(in.ID(), "student-1", "short")
	_, err = f.Svc.Purchase(f.Ctx, bad)
	require.ErrorIs(t, err, club.ErrIdempotencyKeyRequired)
	_, err = purchase.NewService(purchase.Deps{})
	require.Error(t, err)
}
