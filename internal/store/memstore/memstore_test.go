package memstore_test

import (
	"testing"

	"github.com/clubdev/club/internal/store/memstore"
	"github.com/clubdev/club/internal/store/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.RunAll(t, func(*testing.T) storetest.Ports {
		s := memstore.New()
		return storetest.Ports{
			Classes: s.Classes, Enrollments: s.Enrollments, Idempotency: s.Idempotency,
			Profiles: s.Profiles, Inbox: s.Inbox, Projections: s.Projections,
			Outbox: s.Outbox, Leases: s.Leases,
		}
	})
}
