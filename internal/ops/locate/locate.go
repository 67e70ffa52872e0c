package locate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/ops/queues"
)

// Scanner is the part of *dynamodb.Client that Find uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Executions looks an execution of the purchase state machine up by name.
type Executions interface {
	Execution(ctx context.Context, name string) (status string, started time.Time, found bool, err error)
}

// Finder holds the places to look in. Nil or empty fields are not looked in.
type Finder struct {
	DB          Scanner
	ClubTable   string
	OutboxTable string
	SQS         queues.PeekAPI
	Catalog     *queues.Catalog
	// PeekLive also looks into the live queues (each look is a receive).
	PeekLive   bool
	PeekLimit  int
	Executions Executions
	// ExecutionNames are the names an id's executions may have.
	ExecutionNames func(id string) []string
	Now            func() time.Time
}

// Place is one place the id is found in.
type Place struct {
	// Where: "club table", "outbox", "inbox", "queue", "dlq" or "saga".
	Where string `json:"where"`
	// Kind is the item's entity (enrollment, purchase, ...), the event's
	// type, the queue's name or the execution's name.
	Kind string `json:"kind"`
	// Key says which item, message or execution.
	Key string `json:"key"`
	// Status is the item's, event's or execution's status, if it has one.
	Status string `json:"status,omitempty"`
	// At is when it got there: created, processed, sent or started.
	At *time.Time `json:"at,omitempty"`
	// Detail is the item or message itself (personal data is the caller's
	// to mask).
	Detail map[string]any `json:"detail,omitempty"`
}

// Result is everything found.
type Result struct {
	ID     string  `json:"id"`
	Places []Place `json:"places"`
	// Problems are the places that could not be looked in.
	Problems []string `json:"problems,omitempty"`
}

// maxEvents bounds the events whose inbox records are looked up.
const maxEvents = 50

// Find looks for id everywhere. It fails only for an empty id; a place
// that cannot be read is named in Result.Problems.
func (f *Finder) Find(ctx context.Context, id string) (*Result, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("no id to find")
	}
	r := &Result{ID: id, Places: []Place{}}
	events := []string{id}
	if f.DB != nil && f.OutboxTable != "" {
		rows, err := f.scan(ctx, f.OutboxTable, "event_id = :id OR aggregate_id = :id", map[string]types.AttributeValue{":id": s(id)})
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("outbox %s: %v", f.OutboxTable, err))
		}
		slices.SortFunc(rows, func(a, b map[string]any) int { return strings.Compare(str(a, "created_at"), str(b, "created_at")) })
		for _, row := range rows {
			ev := str(row, "event_id")
			r.Places = append(r.Places, Place{Where: "outbox", Kind: str(row, "type"), Key: ev, Status: str(row, "status"), At: at(row, "created_at"), Detail: row})
			if ev != id && len(events) < maxEvents {
				events = append(events, ev)
			}
		}
	}
	if f.DB != nil && f.ClubTable != "" {
		f.club(ctx, id, events, r)
	}
	if f.SQS != nil && f.Catalog != nil {
		f.queues(ctx, id, events, r)
	}
	if f.Executions != nil && f.ExecutionNames != nil {
		for _, name := range f.ExecutionNames(id) {
			status, started, found, err := f.Executions.Execution(ctx, name)
			switch {
			case err != nil:
				r.Problems = append(r.Problems, fmt.Sprintf("execution %s: %v", name, err))
			case found:
				t := started.UTC()
				r.Places = append(r.Places, Place{Where: "saga", Kind: "execution", Key: name, Status: status, At: &t})
			}
		}
	}
	return r, nil
}

// club finds the items whose key ends in id (the entity, a class's member
// or roster entry) and the inbox records of its events.
func (f *Finder) club(ctx context.Context, id string, events []string, r *Result) {
	values := map[string]types.AttributeValue{":id": s(id)}
	var in []string
	for i, ev := range events {
		k := fmt.Sprintf(":e%d", i)
		values[k] = s(ev)
		in = append(in, k)
	}
	filter := fmt.Sprintf("contains(pk, :id) OR contains(sk, :id) OR event_id IN (%s)", strings.Join(in, ", "))
	items, err := f.scan(ctx, f.ClubTable, filter, values)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("club table %s: %v", f.ClubTable, err))
		return
	}
	for _, it := range items {
		pk, sk, entity := str(it, "pk"), str(it, "sk"), str(it, "entity")
		isEvent := slices.Contains(events, str(it, "event_id"))
		if !isEvent && !endsWithID(pk, id) && !endsWithID(sk, id) {
			continue // contains matched a longer id
		}
		p := Place{Where: "club table", Kind: entity, Key: pk + " " + sk, Status: str(it, "status"), Detail: it}
		for _, k := range []string{"created_at", "enrolled_at", "granted_at"} {
			if p.At == nil {
				p.At = at(it, k)
			}
		}
		if entity == "inbox" {
			p.Where, p.Kind, p.Status, p.At = "inbox", str(it, "consumer"), "applied "+str(it, "event_type"), at(it, "processed_at")
		}
		r.Places = append(r.Places, p)
	}
}

func endsWithID(key, id string) bool { return strings.HasSuffix(key, "#"+id) }

// queues peeks the DLQs (and the live queues when asked) for messages of
// id: by message id, event id, or a body naming it.
func (f *Finder) queues(ctx context.Context, id string, events []string, r *Result) {
	look := func(where, name, url string) {
		p, err := queues.Peek(ctx, f.SQS, url, queues.PeekOptions{Limit: f.PeekLimit})
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s %s: %v", where, name, err))
			return
		}
		for _, m := range p.Messages {
			if m.ID != id && !slices.Contains(events, m.Attributes["event_id"]) && !strings.Contains(m.Body, `"`+id+`"`) {
				continue
			}
			sent := m.SentAt.UTC()
			detail := map[string]any{"body": m.Body, "attributes": m.Attributes, "receive_count": m.ReceiveCount}
			r.Places = append(r.Places, Place{Where: where, Kind: name, Key: m.ID, Status: m.Attributes["dlq_code"], At: &sent, Detail: detail})
		}
	}
	for _, q := range f.Catalog.Queues() {
		if f.PeekLive {
			look("queue", q.Name, q.URL)
		}
		if q.DLQURL != "" {
			look("dlq", q.DLQName, q.DLQURL)
		}
	}
}

func (f *Finder) scan(ctx context.Context, table, filter string, values map[string]types.AttributeValue) ([]map[string]any, error) {
	var out []map[string]any
	in := &dynamodb.ScanInput{TableName: aws.String(table), FilterExpression: aws.String(filter), ExpressionAttributeValues: values}
	for {
		page, err := f.DB.Scan(ctx, in)
		if err != nil {
			return out, err
		}
		for _, item := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(item, &m); err != nil {
				return out, err
			}
			out = append(out, m)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func str(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return v
}

func at(m map[string]any, k string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, str(m, k))
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}
