package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/store"
)

var startsAt = time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC)

// enrollOne creates a class and enrolls one student through the service.
func enrollOne(t *testing.T, s *store.Store, now func() time.Time) enrollment.Enrollment {
	t.Helper()
	ctx := context.Background()
	c, err := class.New(events.NewID(), "teacher-1", "Go", 3, startsAt)
	require.NoError(t, err)
	require.NoError(t, s.Classes.Create(ctx, c))
	svc, err := enrollment.NewService(enrollment.Deps{Store: s.Enrollments, Classes: s.Classes, Idempotency: s.Idempotency, Now: now})
	require.NoError(t, err)
	fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, "student-1")
	require.NoError(t, err)
	res, err := svc.Enroll(ctx, enrollment.EnrollRequest{
		ClassID: c.ID(), StudentID: "student-1", IdempotencyKey: "key-00000001", RequestFingerprint: fp,
		Respond: func(e enrollment.Enrollment) (idempotency.Response, error) {
			return idempotency.Response{Status: 201, Body: []byte(`{"enrollment_id":"` + e.ID() + `"}`)}, nil
		},
	})
	require.NoError(t, err)
	return res.Enrollment
}

func rawItem(t *testing.T, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.NotEmpty(t, out.Item, "item %v not found in %s", key, table)
	return out.Item
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func numberOf(t *testing.T, item map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	av, ok := item[name].(*types.AttributeValueMemberN)
	require.True(t, ok, "attribute %s is not a number: %#v", name, item[name])
	n, err := strconv.ParseInt(av.Value, 10, 64)
	require.NoError(t, err)
	return n
}

// TestExpiryStamps checks the TTL attribute of every expiring row, and that
// pending outbox rows have none.
func TestExpiryStamps(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cfg := store.Config{IdempotencyRetention: 2 * time.Hour, InboxRetention: 3 * time.Hour, OutboxRetention: 4 * time.Hour, Now: clock}
	st, cfg := newStore(t, cfg)
	ctx := context.Background()

	e := enrollOne(t, st, clock)
	idem := rawItem(t, cfg.ClubTable, map[string]types.AttributeValue{"pk": s("IDEM#student-1"), "sk": s("KEY#key-00000001")})
	require.Equal(t, now.Add(2*time.Hour).Unix(), numberOf(t, idem, "ttl"))

	rows, err := st.Outbox.Unpublished(ctx, now.Add(time.Second), 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	key := map[string]types.AttributeValue{"event_id": s(rows[0].EventID)}
	pending := rawItem(t, cfg.OutboxTable, key)
	require.NotContains(t, pending, "ttl", "pending rows never expire")
	require.Contains(t, pending, "unpublished_shard")

	published := now.Add(time.Minute)
	require.NoError(t, st.Outbox.MarkPublished(ctx, rows[0].EventID, published))
	done := rawItem(t, cfg.OutboxTable, key)
	require.Equal(t, published.Add(4*time.Hour).Unix(), numberOf(t, done, "ttl"))
	require.NotContains(t, done, "unpublished_shard", "published rows leave the index")

	env, err := rows[0].Envelope()
	require.NoError(t, err)
	require.NoError(t, st.Inbox.ApplyOnce(ctx, "analytics", env, []projection.Effect{projection.CountStats{ClassID: e.ClassID(), Enrollments: 1}}))
	row := rawItem(t, cfg.ClubTable, map[string]types.AttributeValue{"pk": s("INBOX#analytics#" + env.EventID), "sk": s("INBOX")})
	require.Equal(t, now.Add(3*time.Hour).Unix(), numberOf(t, row, "ttl"))
	require.Equal(t, env.Fingerprint(), row["fingerprint"].(*types.AttributeValueMemberS).Value)
}

// imageOf converts an item into the JSON form of a stream record's image and
// back into aws-lambda-go's type, as the relay receives it.
func imageOf(t *testing.T, item map[string]types.AttributeValue) map[string]lambdaevents.DynamoDBAttributeValue {
	t.Helper()
	wire := map[string]map[string]string{}
	for name, av := range item {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			wire[name] = map[string]string{"S": v.Value}
		case *types.AttributeValueMemberN:
			wire[name] = map[string]string{"N": v.Value}
		default:
			t.Fatalf("attribute %s has unexpected type %T", name, av)
		}
	}
	b, err := json.Marshal(wire)
	require.NoError(t, err)
	var image map[string]lambdaevents.DynamoDBAttributeValue
	require.NoError(t, json.Unmarshal(b, &image))
	return image
}

func TestOutboxRowFromStreamImage(t *testing.T) {
	t.Parallel()
	st, cfg := newStore(t, store.Config{})
	ctx := context.Background()
	enrollOne(t, st, nil)
	rows, err := st.Outbox.Unpublished(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)

	image := imageOf(t, rawItem(t, cfg.OutboxTable, map[string]types.AttributeValue{"event_id": s(rows[0].EventID)}))
	row, err := store.OutboxRowFromStreamImage(image)
	require.NoError(t, err)
	require.Equal(t, rows[0], row)
	env, err := row.Envelope()
	require.NoError(t, err)
	require.Equal(t, events.TypeEnrollmentCreated, env.Type)

	for _, missing := range []string{"event_id", "payload", "created_at"} {
		broken := imageOf(t, rawItem(t, cfg.OutboxTable, map[string]types.AttributeValue{"event_id": s(rows[0].EventID)}))
		delete(broken, missing)
		_, err := store.OutboxRowFromStreamImage(broken)
		require.ErrorContains(t, err, missing)
	}
	wrongType := imageOf(t, rawItem(t, cfg.OutboxTable, map[string]types.AttributeValue{"event_id": s(rows[0].EventID)}))
	wrongType["payload"] = lambdaevents.NewNumberAttribute("1")
	_, err = store.OutboxRowFromStreamImage(wrongType)
	require.Error(t, err)
}

func TestCreateTables(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	ctx := context.Background()

	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cfg.OutboxTable)})
	require.NoError(t, err)
	require.NotNil(t, out.Table.StreamSpecification)
	require.True(t, aws.ToBool(out.Table.StreamSpecification.StreamEnabled))
	require.Equal(t, types.StreamViewTypeNewImage, out.Table.StreamSpecification.StreamViewType)
	require.Len(t, out.Table.GlobalSecondaryIndexes, 1)
	require.Equal(t, "unpublished", aws.ToString(out.Table.GlobalSecondaryIndexes[0].IndexName))

	for _, name := range []string{cfg.ClubTable, cfg.OutboxTable} {
		ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		require.NoError(t, err)
		require.Equal(t, "ttl", aws.ToString(ttl.TimeToLiveDescription.AttributeName), name)
		require.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus, name)
	}
}

// TestTemplateMatchesTables keeps the template snippet and the definitions
// the tests use in agreement.
func TestTemplateMatchesTables(t *testing.T) {
	t.Parallel()
	type keyElem struct {
		AttributeName string `yaml:"AttributeName"`
		KeyType       string `yaml:"KeyType"`
	}
	type attrDef struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	}
	type resource struct {
		Type       string `yaml:"Type"`
		Properties struct {
			BillingMode            string    `yaml:"BillingMode"`
			AttributeDefinitions   []attrDef `yaml:"AttributeDefinitions"`
			KeySchema              []keyElem `yaml:"KeySchema"`
			GlobalSecondaryIndexes []struct {
				IndexName  string    `yaml:"IndexName"`
				KeySchema  []keyElem `yaml:"KeySchema"`
				Projection struct {
					ProjectionType string `yaml:"ProjectionType"`
				} `yaml:"Projection"`
			} `yaml:"GlobalSecondaryIndexes"`
			StreamSpecification *struct {
				StreamViewType string `yaml:"StreamViewType"`
			} `yaml:"StreamSpecification"`
			TimeToLiveSpecification struct {
				AttributeName string `yaml:"AttributeName"`
				Enabled       bool   `yaml:"Enabled"`
			} `yaml:"TimeToLiveSpecification"`
			PointInTimeRecoverySpecification struct {
				PointInTimeRecoveryEnabled bool `yaml:"PointInTimeRecoveryEnabled"`
			} `yaml:"PointInTimeRecoverySpecification"`
		} `yaml:"Properties"`
	}
	b, err := os.ReadFile("testdata/template-tables.yaml")
	require.NoError(t, err)
	var tmpl map[string]resource
	require.NoError(t, yaml.Unmarshal(b, &tmpl))

	defs := store.Tables(store.Config{ClubTable: "ClubTable", OutboxTable: "OutboxTable"})
	require.Len(t, tmpl, len(defs))
	for _, def := range defs {
		name := aws.ToString(def.Create.TableName)
		r, ok := tmpl[name]
		require.True(t, ok, "template lacks %s", name)
		p := r.Properties
		require.Equal(t, "AWS::DynamoDB::Table", r.Type)
		require.Equal(t, string(def.Create.BillingMode), p.BillingMode, name)
		require.True(t, p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled, name)
		require.Equal(t, def.TTLAttribute, p.TimeToLiveSpecification.AttributeName, name)
		require.True(t, p.TimeToLiveSpecification.Enabled, name)

		var wantAttrs []attrDef
		for _, a := range def.Create.AttributeDefinitions {
			wantAttrs = append(wantAttrs, attrDef{aws.ToString(a.AttributeName), string(a.AttributeType)})
		}
		require.ElementsMatch(t, wantAttrs, p.AttributeDefinitions, name)
		keys := func(ks []types.KeySchemaElement) []keyElem {
			var out []keyElem
			for _, k := range ks {
				out = append(out, keyElem{aws.ToString(k.AttributeName), string(k.KeyType)})
			}
			return out
		}
		require.Equal(t, keys(def.Create.KeySchema), p.KeySchema, name)
		require.Len(t, p.GlobalSecondaryIndexes, len(def.Create.GlobalSecondaryIndexes), name)
		for i, g := range def.Create.GlobalSecondaryIndexes {
			require.Equal(t, aws.ToString(g.IndexName), p.GlobalSecondaryIndexes[i].IndexName)
			require.Equal(t, keys(g.KeySchema), p.GlobalSecondaryIndexes[i].KeySchema)
			require.Equal(t, string(g.Projection.ProjectionType), p.GlobalSecondaryIndexes[i].Projection.ProjectionType)
		}
		if def.Create.StreamSpecification == nil {
			require.Nil(t, p.StreamSpecification, name)
		} else {
			require.NotNil(t, p.StreamSpecification, name)
			require.Equal(t, string(def.Create.StreamSpecification.StreamViewType), p.StreamSpecification.StreamViewType)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, store.Config{ClubTable: "a", OutboxTable: "b"}.Validate())
	err := store.Config{}.Validate()
	require.ErrorContains(t, err, "ClubTable")
	require.ErrorContains(t, err, "OutboxTable", "every problem at once")
	require.Error(t, store.Config{ClubTable: "a", OutboxTable: "a"}.Validate())
	require.Error(t, store.Config{ClubTable: "a", OutboxTable: "b", InboxRetention: -time.Second}.Validate())
	_, err = store.New(client, store.Config{})
	require.Error(t, err)
}

// scripted wraps the emulator and answers TransactWriteItems from a script
// first: the shapes only real DynamoDB produces (reason code "None",
// TransactionConflict) are checked here.
type scripted struct {
	*dynamodb.Client
	script []error // consumed one per TransactWriteItems; nil passes through
	calls  atomic.Int32
}

func (s *scripted) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	i := int(s.calls.Add(1)) - 1
	if i < len(s.script) && s.script[i] != nil {
		return nil, s.script[i]
	}
	return s.Client.TransactWriteItems(ctx, in, opts...)
}

// cancelled builds an AWS-style cancellation: "None" for items that passed.
func cancelled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
}

func TestTransactionCancellationsAsOnAWS(t *testing.T) {
	t.Parallel()
	conflict := cancelled("None", "None", "TransactionConflict", "None", "None")
	tests := []struct {
		name      string
		script    []error
		wantErr   error
		wantCalls int32
	}{
		{"conflicts are retried", []error{conflict, conflict}, nil, 3},
		{"persistent conflict gives up", []error{conflict, conflict, conflict, conflict, conflict}, club.ErrContention, 5},
		{"throttling is retried", []error{cancelled("None", "ThrottlingError", "None", "None", "None")}, nil, 2},
		{"AWS None codes around a failed condition", []error{cancelled("None", "ConditionalCheckFailed", "None", "None", "None")}, club.ErrAlreadyEnrolled, 1},
		{"a failed condition beats a conflict", []error{cancelled("None", "None", "ConditionalCheckFailed", "TransactionConflict", "None")}, club.ErrClassFull, 1},
		{"other errors pass through", []error{errors.New("connection reset")}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := &scripted{Client: client, script: tt.script}
			st, err := store.New(sc, newTables(t, store.Config{}))
			require.NoError(t, err)
			ctx := context.Background()
			c, err := class.New(events.NewID(), "teacher-1", "Go", 3, startsAt)
			require.NoError(t, err)
			require.NoError(t, st.Classes.Create(ctx, c))
			e, err := enrollment.New(events.NewID(), c.ID(), "student-1", "teacher-1", time.Now())
			require.NoError(t, err)
			env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: "student-1"})
			require.NoError(t, err)

			err = st.Enrollments.Create(ctx, enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
				Caller: "student-1", Key: "key-00000001", Fingerprint: "fp", Response: idempotency.Response{Status: 201}, CreatedAt: time.Now(),
			}})
			require.Equal(t, tt.wantCalls, sc.calls.Load())
			got, getErr := st.Classes.Get(ctx, c.ID())
			require.NoError(t, getErr)
			switch {
			case tt.name == "other errors pass through":
				require.ErrorContains(t, err, "connection reset")
				require.Zero(t, got.SeatsTaken())
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
				require.Zero(t, got.SeatsTaken(), "nothing written")
			default:
				require.NoError(t, err)
				require.Equal(t, 1, got.SeatsTaken(), "written exactly once")
			}
		})
	}
}
