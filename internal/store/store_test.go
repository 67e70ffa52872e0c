package store_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/localcloud/testkit"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/internal/store/storetest"
)

// client talks to the engine the tests run on now (testkit: the package runs
// once on kumo and once on moto), shared by the whole test binary. Tests
// isolate themselves with their own tables.
var client *dynamodb.Client

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		client = dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(url),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
			// kumo's X-Amz-Crc32 header does not match its body; the data is
			// fine, so skip the check instead of logging a warning per call.
			DisableValidateResponseChecksum: true,
		})
	}))
}

var tableSeq atomic.Int64

// newTables creates a fresh pair of tables and returns cfg naming them.
func newTables(t *testing.T, cfg store.Config) store.Config {
	t.Helper()
	n := tableSeq.Add(1)
	cfg.ClubTable = fmt.Sprintf("club-%d", n)
	cfg.OutboxTable = fmt.Sprintf("outbox-%d", n)
	require.NoError(t, store.CreateTables(context.Background(), client, cfg))
	return cfg
}

// newStore returns adapters over a fresh pair of tables.
func newStore(t *testing.T, cfg store.Config) (*store.Store, store.Config) {
	t.Helper()
	cfg = newTables(t, cfg)
	s, err := store.New(client, cfg)
	require.NoError(t, err)
	return s, cfg
}

func ports(s *store.Store) storetest.Ports {
	return storetest.Ports{
		Classes: s.Classes, Enrollments: s.Enrollments, Idempotency: s.Idempotency,
		Profiles: s.Profiles, Inbox: s.Inbox, Projections: s.Projections,
		Outbox: s.Outbox, Leases: s.Leases,
	}
}

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.RunAll(t, func(t *testing.T) storetest.Ports {
		s, _ := newStore(t, store.Config{})
		return ports(s)
	})
}
