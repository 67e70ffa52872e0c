package locate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// tables answers a Scan with every item of the named table, ignoring the
// filter: Find must not report the items DynamoDB's contains() lets through
// for a longer id.
type tables map[string][]map[string]any

func (f tables) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	out := &dynamodb.ScanOutput{}
	for _, it := range f[*in.TableName] {
		av, err := attributevalue.MarshalMap(it)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, av)
	}
	return out, nil
}

var _ Scanner = tables(nil)

type executions map[string]string

func (x executions) Execution(_ context.Context, name string) (string, time.Time, bool, error) {
	s, ok := x[name]
	return s, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ok, nil
}

func TestFindPicksTheIDNotALongerOne(t *testing.T) {
	t.Parallel()
	db := tables{
		"club": {
			{"pk": "ENROLLMENT#e-1", "sk": "ENROLLMENT", "entity": "enrollment", "status": "enrolled", "created_at": "2026-01-02T03:04:05Z"},
			{"pk": "ENROLLMENT#e-10", "sk": "ENROLLMENT", "entity": "enrollment", "status": "cancelled"},
			{"pk": "CLASS#c-1", "sk": "ROSTER#e-1", "entity": "roster_entry", "enrolled_at": "2026-01-02T03:04:06Z"},
			{"pk": "INBOX#analytics#ev-1", "sk": "INBOX", "entity": "inbox", "consumer": "analytics", "event_id": "ev-1", "event_type": "enrollment.created", "processed_at": "2026-01-02T03:04:07Z"},
			{"pk": "INBOX#analytics#ev-2", "sk": "INBOX", "entity": "inbox", "consumer": "analytics", "event_id": "ev-2"},
		},
		// The outbox as its exact filter (event_id or aggregate_id = id)
		// leaves it.
		"outbox": {
			{"event_id": "ev-1", "type": "enrollment.created", "aggregate_id": "e-1", "status": "published", "created_at": "2026-01-02T03:04:05Z"},
		},
	}
	f := &Finder{DB: db, ClubTable: "club", OutboxTable: "outbox", Executions: executions{"e-1": "SUCCEEDED"},
		ExecutionNames: func(id string) []string { return []string{id, id + "-refund"} }}
	r, err := f.Find(context.Background(), " e-1 ")
	require.NoError(t, err)
	require.Equal(t, "e-1", r.ID)
	var got []string
	for _, p := range r.Places {
		got = append(got, strings.Join([]string{p.Where, p.Kind, p.Key, p.Status}, "|"))
	}
	require.Equal(t, []string{
		"outbox|enrollment.created|ev-1|published",
		"club table|enrollment|ENROLLMENT#e-1 ENROLLMENT|enrolled",
		"club table|roster_entry|CLASS#c-1 ROSTER#e-1|",
		"inbox|analytics|INBOX#analytics#ev-1 INBOX|applied enrollment.created",
		"saga|execution|e-1|SUCCEEDED",
	}, got)
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), *r.Places[2].At, "a roster entry's time is when the student enrolled")
	require.Empty(t, r.Problems)

	_, err = f.Find(context.Background(), "  ")
	require.Error(t, err)
}
