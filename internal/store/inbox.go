package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

// record is the inbox record the row holds.
func (it inboxItem) record() inbox.Record {
	return inbox.Record{
		Consumer: it.Consumer, EventID: it.EventID,
		EventType: events.Type(it.EventType), Fingerprint: it.Fingerprint,
	}
}

// Inbox implements projection.Inbox on the club table.
type Inbox struct{ *base }

var _ projection.Inbox = (*Inbox)(nil)

// ApplyOnce commits, in one TransactWriteItems, the inbox row (conditional on
// its absence) and the writes of the effects. The effects' writes are
// unconditional and commutative (see package projection), so the inbox row is
// the only item that can cancel the transaction. An application recorded on
// its roster entry (projection.RecordedOnEntry) is instead one conditional
// UpdateItem of that entry (see applyOnEntry).
func (s *Inbox) ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []projection.Effect) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	if eff, ok := projection.RecordedOnEntry(consumer, effects); ok {
		if err := s.applyOnEntry(ctx, env, eff); err != nil {
			return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, err)
		}
		return nil
	}
	items, _, err := s.transactItems(consumer, []projection.Application{{Event: env, Effects: effects}})
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
	return existing.record().Check(env.Fingerprint())
}

// entryRecordItem is the record a roster entry keeps of the events applied
// to it (projection.EntryRecord).
type entryRecordItem struct {
	CreatedEvent   string `dynamodbav:"created_event"`
	CreatedFP      string `dynamodbav:"created_fp"`
	CancelledEvent string `dynamodbav:"cancelled_event"`
	CancelledFP    string `dynamodbav:"cancelled_fp"`
}

// applyOnEntry applies eff, the one effect of an application recorded on its
// roster entry, with one UpdateItem: the effect's attributes, as_of and the
// record of env, conditional on the entry admitting env
// (projection.EntryRecord.Admits). One item outside a transaction: one write
// unit. When the condition fails, the entry is read (strongly consistent) and
// its record says whether env is a duplicate or a contract conflict.
func (s *Inbox) applyOnEntry(ctx context.Context, env events.Envelope, eff projection.Effect) error {
	w := newEffectWriter(formatTime(s.now()))
	if err := w.record(env, eff); err != nil {
		return err
	}
	if err := w.add(eff); err != nil {
		return err
	}
	up := w.items(aws.String(s.cfg.ClubTable))[0].Update
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: up.TableName, Key: up.Key, UpdateExpression: up.UpdateExpression,
		ConditionExpression: up.ConditionExpression, ExpressionAttributeValues: up.ExpressionAttributeValues,
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("update roster entry: %w", err)
	}
	classID, enrollmentID, _ := projection.EntryOf(eff)
	rec, err := readItem[entryRecordItem](ctx, s.base, itemKey(rosterEntryKey(classID, enrollmentID)),
		"roster entry "+classID+"/"+enrollmentID, club.ErrContention)
	if err != nil {
		return err
	}
	stored := projection.EntryRecord{
		CreatedEvent: rec.CreatedEvent, CreatedFingerprint: rec.CreatedFP,
		CancelledEvent: rec.CancelledEvent, CancelledFingerprint: rec.CancelledFP,
	}
	if err := stored.Check(env, eff); err != nil {
		return err
	}
	// Entries never lose their record, so this is not expected; the
	// caller's retry will apply the event.
	return fmt.Errorf("roster entry %s/%s refused the event, then admits it: %w", classID, enrollmentID, club.ErrContention)
}

// ApplyAllOnce commits the batch's records and merged effects in one
// TransactWriteItems, or in halves when they would exceed DynamoDB's 100
// items (see projection.Inbox). A batch of fifty enrollment events is one
// request instead of fifty. The records are inbox rows, except for the
// applications recorded on their roster entries (projection.RecordedOnEntry):
// those are written on the entry, whose update is then conditional on the
// entry admitting them, one item per entry (the roster's projector applies
// its events on their own instead, see projection.Projector.ApplyAll).
//
// A transaction cancelled only by inbox rows that exist already (a
// redelivered or republished event among new ones) is committed again
// without those events, whose ids the *projection.AlreadyRecorded error then
// names and settles from their rows (see settle): the cancellation reasons
// say which items failed, by index. A batch of fifty with one duplicate is
// then two transactions and a read, not fifty-one transactions and a read.
// Any other cancellation (an entry refusing its event) is returned as it
// is, and the caller applies each event on its own.
func (s *Inbox) ApplyAllOnce(ctx context.Context, consumer string, batch []projection.Application) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	recorded, err := s.applyAll(ctx, consumer, batch, maxApplyRounds)
	switch {
	case err != nil:
		return err
	case len(recorded) > 0:
		return &projection.AlreadyRecorded{EventIDs: recorded, Settled: s.settle(ctx, consumer, batch, recorded)}
	}
	return nil
}

// settle reads the inbox rows of the recorded events (strongly consistent,
// up to 100 in one BatchGetItem) and tells, for each row it reads, a
// duplicate (inbox.ErrDuplicate: the same fingerprint) from another event
// under its id (inbox.ErrContractConflict). A batch that only repeats
// events (a relay's copies after the sweeper published them) is then a
// cancelled transaction and one read, not a transaction and a read an
// event. An event whose row it cannot read (left unprocessed, expired
// since, a failed read) is left out, for the caller's ApplyOnce.
func (s *Inbox) settle(ctx context.Context, consumer string, batch []projection.Application, recorded []string) map[string]error {
	byID := make(map[string]events.Envelope, len(batch))
	for _, a := range batch {
		byID[a.Event.EventID] = a.Event
	}
	settled := make(map[string]error, len(recorded))
	for start := 0; start < len(recorded); start += maxBatchGetKeys {
		chunk := recorded[start:min(len(recorded), start+maxBatchGetKeys)]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, id := range chunk {
			keys[i] = itemKey(inboxKey(consumer, id))
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.cfg.ClubTable: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			continue // ApplyOnce settles them
		}
		for _, item := range out.Responses[s.cfg.ClubTable] {
			var row inboxItem
			if err := attributevalue.UnmarshalMap(item, &row); err != nil {
				continue
			}
			env, ok := byID[row.EventID]
			if !ok || row.Consumer != consumer {
				continue
			}
			settled[row.EventID] = row.record().Check(env.Fingerprint())
		}
	}
	return settled
}

// maxApplyRounds bounds the transactions of one batch (of each half of an
// oversized one): each round leaves out the events found recorded in the
// one before, which only another delivery committing some of the batch at
// the same moment makes necessary more than twice.
const maxApplyRounds = 3

// applyAll commits batch in at most rounds transactions, leaving out the
// events whose inbox rows exist, and returns their ids (see ApplyAllOnce).
func (s *Inbox) applyAll(ctx context.Context, consumer string, batch []projection.Application, rounds int) ([]string, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	items, rows, err := s.transactItems(consumer, batch)
	if err != nil {
		return nil, fmt.Errorf("inbox %s, %d events: %w", consumer, len(batch), err)
	}
	if len(items) > maxTransactItems && len(batch) > 1 {
		half := len(batch) / 2
		first, err1 := s.applyAll(ctx, consumer, batch[:half], rounds)
		second, err2 := s.applyAll(ctx, consumer, batch[half:], rounds)
		return append(first, second...), errors.Join(err1, err2)
	}
	err = s.transact(ctx, items)
	if err == nil {
		return nil, nil
	}
	var cancelled *txCancelled
	if !errors.As(err, &cancelled) || rounds <= 1 {
		return nil, fmt.Errorf("inbox %s, %d events: %w", consumer, len(batch), err)
	}
	refused := make(map[int]bool)
	for i := range items {
		if !cancelled.failed(i) {
			continue
		}
		if i >= len(rows) {
			// An effect or an entry's record refused: not a recorded event.
			return nil, fmt.Errorf("inbox %s, %d events: %w", consumer, len(batch), err)
		}
		refused[rows[i]] = true
	}
	var recorded []string
	rest := make([]projection.Application, 0, len(batch)-len(refused))
	for j, a := range batch {
		if refused[j] {
			recorded = append(recorded, a.Event.EventID)
		} else {
			rest = append(rest, a)
		}
	}
	more, err := s.applyAll(ctx, consumer, rest, rounds-1)
	return append(recorded, more...), err
}

// transactItems returns the inbox row of each event (conditional on its
// absence) that is not recorded on its roster entry, in batch order,
// followed by the writes of all their effects and the records on entries;
// and, for each inbox row (the first items), the index in batch of its
// event.
func (s *Inbox) transactItems(consumer string, batch []projection.Application) ([]types.TransactWriteItem, []int, error) {
	now := s.now()
	items := make([]types.TransactWriteItem, 0, 3*len(batch))
	var rows []int
	w := newEffectWriter(formatTime(now))
	ids := make(map[string]bool, len(batch))
	for j, a := range batch {
		if ids[a.Event.EventID] {
			return nil, nil, fmt.Errorf("event %s twice in one batch", a.Event.EventID)
		}
		ids[a.Event.EventID] = true
		if eff, ok := projection.RecordedOnEntry(consumer, a.Effects); ok {
			if err := w.record(a.Event, eff); err != nil {
				return nil, nil, err
			}
		} else {
			rec := inbox.NewRecord(consumer, a.Event, now)
			pk, sk := inboxKey(consumer, a.Event.EventID)
			row, err := attributevalue.MarshalMap(inboxItem{
				PK: pk, SK: sk, Entity: "inbox",
				Consumer: consumer, EventID: rec.EventID, EventType: string(rec.EventType),
				Fingerprint: rec.Fingerprint, ProcessedAt: formatTime(now),
				TTL: expiry(now.Add(s.cfg.InboxRetention)),
			})
			if err != nil {
				return nil, nil, fmt.Errorf("event %s: %w", a.Event.EventID, err)
			}
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName:           aws.String(s.cfg.ClubTable),
				Item:                row,
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			}})
			rows = append(rows, j)
		}
		for _, eff := range a.Effects {
			if err := w.add(eff); err != nil {
				return nil, nil, err
			}
		}
	}
	return append(items, w.items(aws.String(s.cfg.ClubTable))...), rows, nil
}

// effectWriter translates effects into updates of the club table, one per
// item, because a transaction may touch each item only once: the effects
// on one roster entry are merged (an enrollment and its cancellation in one
// batch) and counter effects on one class are summed. The roster's as-of is
// written on each entry the batch touches, not on an item of its own: the
// reader takes the latest, and a class's batch writes one item fewer. Two
// effects that set one attribute of an item to different values are
// refused.
type effectWriter struct {
	asOf       string
	sets       itemSets
	stats      map[string]*projection.CountStats
	statsOrder []string
}

func newEffectWriter(asOf string) *effectWriter {
	return &effectWriter{asOf: asOf, stats: map[string]*projection.CountStats{}}
}

func (w *effectWriter) add(eff projection.Effect) error {
	switch eff := eff.(type) {
	case projection.AddToRoster:
		pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
		return w.sets.set(pk, sk, "entity", "roster_entry", "class_id", eff.ClassID, "enrollment_id", eff.EnrollmentID,
			"student_id", eff.StudentID, "enrolled_at", formatTime(eff.EnrolledAt), "as_of", w.asOf)
	case projection.RemoveFromRoster:
		pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
		return w.sets.set(pk, sk, "entity", "roster_entry", "class_id", eff.ClassID, "enrollment_id", eff.EnrollmentID,
			"cancelled_at", formatTime(eff.CancelledAt), "as_of", w.asOf)
	case projection.CountStats:
		if st, ok := w.stats[eff.ClassID]; ok {
			st.Enrollments += eff.Enrollments
			st.Cancellations += eff.Cancellations
			return nil
		}
		st := eff
		w.stats[eff.ClassID] = &st
		w.statsOrder = append(w.statsOrder, eff.ClassID)
		return nil
	default:
		return fmt.Errorf("unsupported effect %T", eff)
	}
}

// record writes env's record on the roster entry that eff changes
// (created_event and created_fp for an AddToRoster, cancelled_event and
// cancelled_fp for a RemoveFromRoster) and makes the entry's update
// conditional on admitting env, as projection.EntryRecord.Admits: no event
// of that kind recorded yet, and env's id not the other kind's. Two events
// of one kind on one entry in a batch set one attribute twice: refused.
func (w *effectWriter) record(env events.Envelope, eff projection.Effect) error {
	own, other := "created", "cancelled"
	switch eff.(type) {
	case projection.AddToRoster:
	case projection.RemoveFromRoster:
		own, other = other, own
	default:
		return fmt.Errorf("effect %T is not recorded on a roster entry", eff)
	}
	classID, enrollmentID, _ := projection.EntryOf(eff)
	pk, sk := rosterEntryKey(classID, enrollmentID)
	if err := w.sets.set(pk, sk, own+"_event", env.EventID, own+"_fp", env.Fingerprint()); err != nil {
		return err
	}
	w.sets.require(pk, sk, fmt.Sprintf("attribute_not_exists(%s_event) AND (attribute_not_exists(%s_event) OR %[2]s_event <> %%s)", own, other), env.EventID)
	return nil
}

func (w *effectWriter) items(table *string) []types.TransactWriteItem {
	writes := w.sets.updates(table)
	for _, classID := range w.statsOrder {
		st := w.stats[classID]
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
	return writes
}

// itemSets gathers the string attributes to set on items, and the
// conditions of their updates, one update per item, in the order the items
// were first touched.
type itemSets struct {
	order []string            // item keys (pk NUL sk)
	items map[string]*itemSet // by item key
}

type itemSet struct {
	pk, sk string
	names  []string          // in the order first set
	values map[string]string // by name
	conds  []string          // conditions, each with its value as :c<index>
	cvals  []string          // the conditions' values, by index
}

func (s *itemSets) item(pk, sk string) *itemSet {
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
	return it
}

// set records name/value pairs (alternating) for the item; a name already
// set to another value is an error.
func (s *itemSets) set(pk, sk string, pairs ...string) error {
	it := s.item(pk, sk)
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

// require adds a condition to the item's update; cond holds one %s, where
// value's placeholder goes. The conditions of an item are all required.
func (s *itemSets) require(pk, sk, cond, value string) {
	it := s.item(pk, sk)
	it.conds = append(it.conds, fmt.Sprintf(cond, fmt.Sprintf(":c%d", len(it.cvals))))
	it.cvals = append(it.cvals, value)
}

func (s *itemSets) updates(table *string) []types.TransactWriteItem {
	out := make([]types.TransactWriteItem, 0, len(s.order))
	for _, key := range s.order {
		it := s.items[key]
		assignments := make([]string, len(it.names))
		values := make(map[string]types.AttributeValue, len(it.names)+len(it.cvals))
		for i, name := range it.names {
			v := fmt.Sprintf(":v%d", i)
			assignments[i] = name + " = " + v
			values[v] = str(it.values[name])
		}
		up := &types.Update{
			TableName:                 table,
			Key:                       itemKey(it.pk, it.sk),
			UpdateExpression:          aws.String("SET " + strings.Join(assignments, ", ")),
			ExpressionAttributeValues: values,
		}
		if len(it.conds) > 0 {
			for i, v := range it.cvals {
				values[fmt.Sprintf(":c%d", i)] = str(v)
			}
			up.ConditionExpression = aws.String("(" + strings.Join(it.conds, ") AND (") + ")")
		}
		out = append(out, types.TransactWriteItem{Update: up})
	}
	return out
}
