package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/store"
)

// tenEnrollments is a Lambda batch: enrollments e-0…e-9 of students s-0…s-9
// in classes c-0…c-2 (e-i in c-(i mod 3)).
func tenEnrollments(t *testing.T) []events.Envelope {
	t.Helper()
	var envs []events.Envelope
	for i := range 10 {
		env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{
			EnrollmentID: fmt.Sprintf("e-%d", i), ClassID: fmt.Sprintf("c-%d", i%3), StudentID: fmt.Sprintf("s-%d", i),
		})
		require.NoError(t, err)
		envs = append(envs, env)
	}
	return envs
}

// countedStore is a store on fresh tables whose requests are counted.
func countedStore(t *testing.T) (store.Config, *countingDB, *store.Store) {
	t.Helper()
	cfg := newTables(t, store.Config{})
	db := &countingDB{DynamoDB: client}
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	return cfg, db, st
}

// A Lambda batch of ten enrollment events is one TransactWriteItems for the
// analytics consumer; the roster's is one conditional UpdateItem per entry,
// outside any transaction; nothing is read.
func TestApplyAllOnceIsOneTransactionPerBatch(t *testing.T) {
	t.Parallel()
	_, db, st := countedStore(t)
	ctx := context.Background()
	envs := tenEnrollments(t)
	for _, p := range []*projection.Projector{projection.NewStatsProjector(st.Inbox), projection.NewRosterProjector(st.Inbox)} {
		require.Equal(t, make([]error, len(envs)), p.ApplyAll(ctx, envs), p.Consumer())
	}
	require.EqualValues(t, 1, db.transacts.Load())
	require.EqualValues(t, 10, db.updates.Load())
	require.Zero(t, db.gets.Load())

	var total int64
	for c := range 3 {
		s, err := st.Projections.Stats(ctx, fmt.Sprintf("c-%d", c))
		require.NoError(t, err)
		total += s.EnrollmentsTotal
	}
	require.EqualValues(t, 10, total)
}

// A batch holding events already applied (a redelivery mixed with new
// events, a republished event) costs analytics two transactions and one
// read, not a transaction an event: the cancellation reasons name the
// refused inbox rows, the second transaction commits the others, and one
// BatchGetItem of the named rows tells each a duplicate. A batch that only
// repeats events (the relay's copies of what the sweeper published) is one
// cancelled transaction and one read.
func TestARedeliveredEventCostsTheBatchOneMoreTransaction(t *testing.T) {
	t.Parallel()
	_, db, st := countedStore(t)
	ctx := context.Background()
	stats := projection.NewStatsProjector(st.Inbox)
	envs := tenEnrollments(t)
	require.NoError(t, stats.Apply(ctx, envs[3]))
	require.NoError(t, stats.Apply(ctx, envs[7]))
	transacts, gets := db.transacts.Load(), db.gets.Load()

	errs := stats.ApplyAll(ctx, envs)
	for i, err := range errs {
		if i == 3 || i == 7 {
			require.ErrorIs(t, err, inbox.ErrDuplicate, "event %d", i)
		} else {
			require.NoError(t, err, "event %d", i)
		}
	}
	require.EqualValues(t, 2, db.transacts.Load()-transacts, "the batch's, then the batch's less the two")
	require.EqualValues(t, 1, db.batchGets.Load(), "the two rows, read at once to tell duplicates")
	require.Equal(t, gets, db.gets.Load(), "no read of its own for either")

	// The whole batch again: every event a duplicate.
	transacts = db.transacts.Load()
	for i, err := range stats.ApplyAll(ctx, envs) {
		require.ErrorIs(t, err, inbox.ErrDuplicate, "event %d", i)
	}
	require.EqualValues(t, 1, db.transacts.Load()-transacts, "one cancelled transaction")
	require.EqualValues(t, 2, db.batchGets.Load(), "and one read of the ten rows")
	require.Equal(t, gets, db.gets.Load())

	var total int64
	for c := range 3 {
		s, err := st.Projections.Stats(ctx, fmt.Sprintf("c-%d", c))
		require.NoError(t, err)
		total += s.EnrollmentsTotal
	}
	require.EqualValues(t, 10, total, "each event counted once")
}

// The roster's entries are their own inbox: a batch of ten enrollments is ten
// conditional UpdateItems (one per entry, one write unit each; a transaction
// would bill each item twice) and writes no inbox row, while analytics keeps
// its inbox rows in one transaction; a single event is one conditional
// UpdateItem, and its duplicate one more refused update and one read.
func TestRosterEntriesAreTheirOwnInbox(t *testing.T) {
	t.Parallel()
	cfg, db, st := countedStore(t)
	ctx := context.Background()
	envs := tenEnrollments(t)
	roster, stats := projection.NewRosterProjector(st.Inbox), projection.NewStatsProjector(st.Inbox)
	require.Equal(t, make([]error, len(envs)), roster.ApplyAll(ctx, envs))
	require.Zero(t, db.transacts.Load(), "no transaction for the roster")
	require.EqualValues(t, 10, db.updates.Load(), "one conditional update per entry")
	require.Zero(t, db.gets.Load())
	require.Equal(t, make([]error, len(envs)), stats.ApplyAll(ctx, envs))
	require.EqualValues(t, 1, db.transacts.Load())
	require.EqualValues(t, 10+3, db.transactItems.Load(), "analytics: an inbox row per event and a counter per class")

	row := func(consumer, eventID string) map[string]types.AttributeValue {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(cfg.ClubTable), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": s("INBOX#" + consumer + "#" + eventID), "sk": s("INBOX")},
		})
		require.NoError(t, err)
		return out.Item
	}
	for _, env := range envs {
		require.Empty(t, row(projection.ConsumerRoster, env.EventID), "no roster inbox row for %s", env.EventID)
		require.NotEmpty(t, row(projection.ConsumerAnalytics, env.EventID), "analytics keeps its inbox row for %s", env.EventID)
	}
	entry := rawItem(t, cfg.ClubTable, map[string]types.AttributeValue{"pk": s("CLASS#c-0"), "sk": s("ROSTER#e-0")})
	require.Equal(t, s(envs[0].EventID), entry["created_event"])
	require.Equal(t, s(envs[0].Fingerprint()), entry["created_fp"])
	var students int
	for c := range 3 {
		r, err := st.Projections.Roster(ctx, fmt.Sprintf("c-%d", c))
		require.NoError(t, err)
		students += len(r.Students)
	}
	require.Equal(t, 10, students, "the entries are right")

	// One event on its own: one conditional update, no transaction.
	leaves, err := events.New(events.NewID(), time.Now(), events.EnrollmentCancelled{EnrollmentID: "e-0", ClassID: "c-0", StudentID: "s-0"})
	require.NoError(t, err)
	transacts, updates, gets := db.transacts.Load(), db.updates.Load(), db.gets.Load()
	require.NoError(t, roster.Apply(ctx, leaves))
	require.Equal(t, [3]int32{transacts, updates + 1, gets}, [3]int32{db.transacts.Load(), db.updates.Load(), db.gets.Load()})
	require.ErrorIs(t, roster.Apply(ctx, leaves), inbox.ErrDuplicate)
	require.Equal(t, [3]int32{transacts, updates + 2, gets + 1}, [3]int32{db.transacts.Load(), db.updates.Load(), db.gets.Load()},
		"a duplicate: the refused update and one read of the entry")
	require.Empty(t, row(projection.ConsumerRoster, leaves.EventID))
	r, err := st.Projections.Roster(ctx, "c-0")
	require.NoError(t, err)
	require.Len(t, r.Students, 3)
}
