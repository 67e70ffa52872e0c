package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/projection"
)

type inboxItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Entity      string `dynamodbav:"entity"`
	Consumer    string `dynamodbav:"consumer"`
	EventID     string `dynamodbav:"event_id"`
	EventType   string `dynamodbav:"event_type"`
	Fingerprint string `dynamodbav:"fingerprint"`
	ProcessedAt string `dynamodbav:"processed_at"`
	TTL         int64  `dynamodbav:"ttl"`
}

// Inbox implements projection.Inbox on the club table.
type Inbox struct{ *base }

var _ projection.Inbox = (*Inbox)(nil)

// ApplyOnce commits, in one TransactWriteItems, the inbox row (conditional on
// its absence) and the writes of the effects. The effects' writes are
// unconditional and commutative (see package projection), so the inbox row is
// the only item that can cancel the transaction.
func (s *Inbox) ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []projection.Effect) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	items, err := s.transactItems(consumer, []projection.Application{{Event: env, Effects: effects}})
	if err != nil {
		return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, err)
	}
	err = s.transact(ctx, items)
	var tc *txCancelled
	if !errors.As(err, &tc) {
		if err != nil {
			return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, err)
		}
		return nil
	}
	if !tc.failed(0) {
		return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, tc)
	}
	pk, sk := inboxKey(consumer, env.EventID)
	item, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(pk, sk))
	if err != nil {
		return fmt.Errorf("inbox %s, event %s: read existing row: %w", consumer, env.EventID, err)
	}
	if !found {
		// Only possible if TTL removed the row between the two calls; the
		// caller's retry will apply the event.
		return fmt.Errorf("inbox %s, event %s: row vanished: %w", consumer, env.EventID, club.ErrContention)
	}
	var existing inboxItem
	if err := attributevalue.UnmarshalMap(item, &existing); err != nil {
		return fmt.Errorf("inbox %s, event %s: decode existing row: %w", consumer, env.EventID, err)
	}
	stored := inbox.Record{
		Consumer: existing.Consumer, EventID: existing.EventID,
		EventType: events.Type(existing.EventType), Fingerprint: existing.Fingerprint,
	}
	return stored.Check(env.Fingerprint())
}

// ApplyAllOnce commits the batch's inbox rows and merged effects in one
// TransactWriteItems, or in halves when they would exceed DynamoDB's 100
// items (see projection.Inbox). A batch of ten enrollment events is one
// request instead of ten. The error of a cancelled transaction does not say
// which event was the duplicate: the caller applies each event on its own
// then.
func (s *Inbox) ApplyAllOnce(ctx context.Context, consumer string, batch []projection.Application) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	if len(batch) == 0 {
		return nil
	}
	items, err := s.transactItems(consumer, batch)
	if err != nil {
		return fmt.Errorf("inbox %s, %d events: %w", consumer, len(batch), err)
	}
	if len(items) > maxTransactItems && len(batch) > 1 {
		half := len(batch) / 2
		return errors.Join(s.ApplyAllOnce(ctx, consumer, batch[:half]), s.ApplyAllOnce(ctx, consumer, batch[half:]))
	}
	if err := s.transact(ctx, items); err != nil {
		return fmt.Errorf("inbox %s, %d events: %w", consumer, len(batch), err)
	}
	return nil
}

// transactItems returns the inbox row of each event (conditional on its
// absence), in batch order, followed by the writes of all their effects.
func (s *Inbox) transactItems(consumer string, batch []projection.Application) ([]types.TransactWriteItem, error) {
	now := s.now()
	items := make([]types.TransactWriteItem, 0, 3*len(batch))
	var effects []projection.Effect
	ids := make(map[string]bool, len(batch))
	for _, a := range batch {
		if ids[a.Event.EventID] {
			return nil, fmt.Errorf("event %s twice in one batch", a.Event.EventID)
		}
		ids[a.Event.EventID] = true
		rec := inbox.NewRecord(consumer, a.Event, now)
		pk, sk := inboxKey(consumer, a.Event.EventID)
		row, err := attributevalue.MarshalMap(inboxItem{
			PK: pk, SK: sk, Entity: "inbox",
			Consumer: consumer, EventID: rec.EventID, EventType: string(rec.EventType),
			Fingerprint: rec.Fingerprint, ProcessedAt: formatTime(now),
			TTL: expiry(now.Add(s.cfg.InboxRetention)),
		})
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", a.Event.EventID, err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:           aws.String(s.cfg.ClubTable),
			Item:                row,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}})
		effects = append(effects, a.Effects...)
	}
	writes, err := s.effectWrites(effects)
	if err != nil {
		return nil, err
	}
	return append(items, writes...), nil
}

// effectWrites translates effects into updates of the club table, one per
// item, because a transaction may touch each item only once: the effects
// on one roster entry are merged (an enrollment and its cancellation in one
// batch) and counter effects on one class are summed. The roster's as-of is
// written on each entry the batch touches, not on an item of its own: the
// reader takes the latest, and a class's batch writes one item fewer. Two
// effects that set one attribute of an item to different values are
// refused.
func (s *Inbox) effectWrites(effects []projection.Effect) ([]types.TransactWriteItem, error) {
	asOf := formatTime(s.now())
	sets := &itemSets{}
	stats := map[string]*projection.CountStats{}
	var statsOrder []string
	for _, eff := range effects {
		switch eff := eff.(type) {
		case projection.AddToRoster:
			pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
			err := sets.set(pk, sk, "entity", "roster_entry", "class_id", eff.ClassID, "enrollment_id", eff.EnrollmentID,
				"student_id", eff.StudentID, "enrolled_at", formatTime(eff.EnrolledAt), "as_of", asOf)
			if err != nil {
				return nil, err
			}
		case projection.RemoveFromRoster:
			pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
			err := sets.set(pk, sk, "entity", "roster_entry", "class_id", eff.ClassID, "enrollment_id", eff.EnrollmentID,
				"cancelled_at", formatTime(eff.CancelledAt), "as_of", asOf)
			if err != nil {
				return nil, err
			}
		case projection.CountStats:
			if st, ok := stats[eff.ClassID]; ok {
				st.Enrollments += eff.Enrollments
				st.Cancellations += eff.Cancellations
				continue
			}
			st := eff
			stats[eff.ClassID] = &st
			statsOrder = append(statsOrder, eff.ClassID)
		default:
			return nil, fmt.Errorf("unsupported effect %T", eff)
		}
	}
	table := aws.String(s.cfg.ClubTable)
	writes := sets.updates(table)
	for _, classID := range statsOrder {
		st := stats[classID]
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:        table,
			Key:              itemKey(statsKey(classID)),
			UpdateExpression: aws.String("SET entity = :entity, class_id = :class ADD enrollments_total :enrollments, cancellations_total :cancellations"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":entity": str("stats"), ":class": str(classID),
				":enrollments": num(st.Enrollments), ":cancellations": num(st.Cancellations),
			},
		}})
	}
	return writes, nil
}

// itemSets gathers the string attributes to set on items, one update per
// item, in the order the items were first touched.
type itemSets struct {
	order []string            // item keys (pk NUL sk)
	items map[string]*itemSet // by item key
}

type itemSet struct {
	pk, sk string
	names  []string          // in the order first set
	values map[string]string // by name
}

// set records name/value pairs (alternating) for the item; a name already
// set to another value is an error.
func (s *itemSets) set(pk, sk string, pairs ...string) error {
	key := pk + "\x00" + sk
	it, ok := s.items[key]
	if !ok {
		if s.items == nil {
			s.items = map[string]*itemSet{}
		}
		it = &itemSet{pk: pk, sk: sk, values: map[string]string{}}
		s.items[key] = it
		s.order = append(s.order, key)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		name, value := pairs[i], pairs[i+1]
		if old, ok := it.values[name]; ok {
			if old != value {
				return fmt.Errorf("two effects on item %s/%s set %s to %q and %q", pk, sk, name, old, value)
			}
			continue
		}
		it.names = append(it.names, name)
		it.values[name] = value
	}
	return nil
}

func (s *itemSets) updates(table *string) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, 0, len(s.order))
	for _, key := range s.order {
		it := s.items[key]
		assignments := make([]string, len(it.names))
		values := make(map[string]types.AttributeValue, len(it.names))
		for i, name := range it.names {
			v := fmt.Sprintf(":v%d", i)
			assignments[i] = name + " = " + v
			values[v] = str(it.values[name])
		}
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName:                 table,
			Key:                       itemKey(it.pk, it.sk),
			UpdateExpression:          aws.String("SET " + strings.Join(assignments, ", ")),
			ExpressionAttributeValues: values,
		}})
	}
	return out
}
