package store

import (
	"context"
	"errors"
	"fmt"

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
	now := s.now()
	rec := inbox.NewRecord(consumer, env, now)
	pk, sk := inboxKey(consumer, env.EventID)
	row, err := attributevalue.MarshalMap(inboxItem{
		PK: pk, SK: sk, Entity: "inbox",
		Consumer: consumer, EventID: rec.EventID, EventType: string(rec.EventType),
		Fingerprint: rec.Fingerprint, ProcessedAt: formatTime(now),
		TTL: expiry(now.Add(s.cfg.InboxRetention)),
	})
	if err != nil {
		return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, err)
	}
	writes, err := s.effectWrites(effects)
	if err != nil {
		return fmt.Errorf("inbox %s, event %s: %w", consumer, env.EventID, err)
	}
	items := append([]types.TransactWriteItem{{Put: &types.Put{
		TableName:           aws.String(s.cfg.ClubTable),
		Item:                row,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}}, writes...)

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
	return stored.Check(rec.Fingerprint)
}

// effectWrites translates effects into updates of the club table. Counter
// effects on one class are merged, and the roster's as-of is written once per
// class, because a transaction may touch each item only once.
func (s *Inbox) effectWrites(effects []projection.Effect) ([]types.TransactWriteItem, error) {
	table := aws.String(s.cfg.ClubTable)
	asOf := str(formatTime(s.now()))
	var writes []types.TransactWriteItem
	touched := map[string]bool{}
	touch := func(pk, sk string) error {
		if touched[pk+"\x00"+sk] {
			return fmt.Errorf("two effects on item %s/%s in one event", pk, sk)
		}
		touched[pk+"\x00"+sk] = true
		return nil
	}
	rosterClasses := []string{}
	stats := map[string]*projection.CountStats{}
	statsOrder := []string{}
	for _, eff := range effects {
		switch eff := eff.(type) {
		case projection.AddToRoster:
			pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
			if err := touch(pk, sk); err != nil {
				return nil, err
			}
			writes = append(writes, types.TransactWriteItem{Update: &types.Update{
				TableName:        table,
				Key:              itemKey(pk, sk),
				UpdateExpression: aws.String("SET entity = :entity, class_id = :class, enrollment_id = :enrollment, student_id = :student, enrolled_at = :at"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":entity": str("roster_entry"), ":class": str(eff.ClassID), ":enrollment": str(eff.EnrollmentID),
					":student": str(eff.StudentID), ":at": str(formatTime(eff.EnrolledAt)),
				},
			}})
			rosterClasses = append(rosterClasses, eff.ClassID)
		case projection.RemoveFromRoster:
			pk, sk := rosterEntryKey(eff.ClassID, eff.EnrollmentID)
			if err := touch(pk, sk); err != nil {
				return nil, err
			}
			writes = append(writes, types.TransactWriteItem{Update: &types.Update{
				TableName:        table,
				Key:              itemKey(pk, sk),
				UpdateExpression: aws.String("SET entity = :entity, class_id = :class, enrollment_id = :enrollment, cancelled_at = :at"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":entity": str("roster_entry"), ":class": str(eff.ClassID), ":enrollment": str(eff.EnrollmentID),
					":at": str(formatTime(eff.CancelledAt)),
				},
			}})
			rosterClasses = append(rosterClasses, eff.ClassID)
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
	for _, classID := range rosterClasses {
		pk, sk := rosterMetaKey(classID)
		if touched[pk+"\x00"+sk] {
			continue
		}
		touched[pk+"\x00"+sk] = true
		writes = append(writes, types.TransactWriteItem{Update: &types.Update{
			TableName:                 table,
			Key:                       itemKey(pk, sk),
			UpdateExpression:          aws.String("SET entity = :entity, class_id = :class, as_of = :at"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":entity": str("roster"), ":class": str(classID), ":at": asOf},
		}})
	}
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
