package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/purchase"
)

type purchaseItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	Entity        string `dynamodbav:"entity"`
	PurchaseID    string `dynamodbav:"purchase_id"`
	IntensiveID   string `dynamodbav:"intensive_id"`
	StudentID     string `dynamodbav:"student_id"`
	AmountCents   int64  `dynamodbav:"amount_cents"`
	Currency      string `dynamodbav:"currency"`
	Status        string `dynamodbav:"status"`
	CreatedAt     string `dynamodbav:"created_at"`
	HoldExpiresAt string `dynamodbav:"hold_expires_at"`
	PaymentID     string `dynamodbav:"payment_id,omitempty"`
	CheckoutURL   string `dynamodbav:"checkout_url,omitempty"`
	PaymentStatus string `dynamodbav:"payment_status,omitempty"`
	// RefundID and RefundStatus are the current refund attempt's; rows
	// written before refunds had attempts have only these.
	RefundID     string `dynamodbav:"refund_id,omitempty"`
	RefundStatus string `dynamodbav:"refund_status,omitempty"`
	// Refunds are the refund attempts, oldest first: [{key, refund_id, status, requested_at}].
	Refunds     []refundItem `dynamodbav:"refunds,omitempty"`
	LatePayment bool         `dynamodbav:"late_payment,omitempty"`
	TaskToken   string       `dynamodbav:"task_token,omitempty"`
	Note        string       `dynamodbav:"note,omitempty"`
	// History is appended to by every transition: [{status, at}].
	History []historyItem `dynamodbav:"history"`
	// Version guards every read-modify-write of the row.
	Version int64 `dynamodbav:"version"`
}

type refundItem struct {
	Key         string `dynamodbav:"key"`
	RefundID    string `dynamodbav:"refund_id,omitempty"`
	Status      string `dynamodbav:"status,omitempty"`
	RequestedAt string `dynamodbav:"requested_at"`
}

type historyItem struct {
	Status string `dynamodbav:"status"`
	At     string `dynamodbav:"at"`
	// By and Reason: a person's change (clubctl reconcile resolve).
	By     string `dynamodbav:"by,omitempty"`
	Reason string `dynamodbav:"reason,omitempty"`
}

// accessItem is a student's access to an intensive: unique per intensive
// and student, written by the transition that confirms a purchase.
type accessItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Entity      string `dynamodbav:"entity"`
	IntensiveID string `dynamodbav:"intensive_id"`
	StudentID   string `dynamodbav:"student_id"`
	PurchaseID  string `dynamodbav:"purchase_id"`
	GrantedAt   string `dynamodbav:"granted_at"`
}

// Purchases implements purchase.Store on the club and outbox tables.
type Purchases struct{ *base }

var _ purchase.Store = (*Purchases)(nil)

// PurchaseAdapters are the adapters of the purchase domain.
type PurchaseAdapters struct {
	Intensives *Intensives
	Purchases  *Purchases
}

// NewPurchaseAdapters validates cfg and returns the purchase domain's
// adapters over db; like New, build them once per process.
func NewPurchaseAdapters(db DynamoDB, cfg Config) (*PurchaseAdapters, error) {
	if db == nil {
		return nil, errors.New("store: nil DynamoDB client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &base{db: retryWriteConflicts{db}, cfg: cfg.withDefaults()}
	return &PurchaseAdapters{Intensives: &Intensives{b}, Purchases: &Purchases{b}}, nil
}

// The create transaction's items, in the order of their errors' precedence.
const (
	purchaseCreateIdempotency = iota
	purchaseCreateHold
	purchaseCreatePurchase
	purchaseCreateOutbox
)

// Create commits the purchase in one TransactWriteItems (see
// purchase.Store): the idempotency record, the hold (seats_free - 1,
// seats_held + 1 if seats_free > 0), the purchase and the outbox row. As for
// enrollments, no ClientRequestToken is sent: a retried commit fails on the
// idempotency record and is answered as a replay.
func (s *Purchases) Create(ctx context.Context, c purchase.Creation) error {
	p := c.Purchase.Snapshot()
	idem, err := s.idempotencyItem(c.Idempotency)
	if err != nil {
		return fmt.Errorf("create purchase %s: %w", p.ID, err)
	}
	item, err := attributevalue.MarshalMap(newPurchaseItem(p, 1))
	if err != nil {
		return fmt.Errorf("create purchase %s: %w", p.ID, err)
	}
	out, err := outboxPut(s.cfg.OutboxTable, c.Event, p.CreatedAt)
	if err != nil {
		return fmt.Errorf("create purchase %s: %w", p.ID, err)
	}
	clubTable := aws.String(s.cfg.ClubTable)
	notExists := aws.String("attribute_not_exists(pk)")
	items := make([]types.TransactWriteItem, purchaseCreateOutbox+1)
	items[purchaseCreateIdempotency] = types.TransactWriteItem{Put: &types.Put{TableName: clubTable, Item: idem, ConditionExpression: notExists}}
	items[purchaseCreateHold] = types.TransactWriteItem{Update: &types.Update{
		TableName:                 clubTable,
		Key:                       itemKey(intensiveKey(p.IntensiveID)),
		UpdateExpression:          aws.String("SET #free = #free - :one, #held = #held + :one"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #free > :zero"),
		ExpressionAttributeNames:  map[string]string{"#free": "seats_free", "#held": "seats_held"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":zero": num(0)},
	}}
	items[purchaseCreatePurchase] = types.TransactWriteItem{Put: &types.Put{TableName: clubTable, Item: item, ConditionExpression: notExists}}
	items[purchaseCreateOutbox] = types.TransactWriteItem{Put: out}

	err = s.transact(ctx, items)
	var tc *txCancelled
	if !errors.As(err, &tc) {
		if err != nil {
			return fmt.Errorf("create purchase %s: %w", p.ID, err)
		}
		return nil
	}
	switch {
	case tc.failed(purchaseCreateIdempotency):
		rec, err := (&Idempotency{s.base}).Get(ctx, c.Idempotency.Caller, c.Idempotency.Key)
		if err != nil {
			return fmt.Errorf("create purchase %s: lost to an existing idempotency record: %w", p.ID, err)
		}
		return &idempotency.ExistsError{Record: rec}
	case tc.failed(purchaseCreateHold):
		// Fails for a missing intensive and for a full one; read to tell.
		_, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(intensiveKey(p.IntensiveID)))
		switch {
		case err != nil:
			return fmt.Errorf("create purchase %s: read intensive: %w", p.ID, err)
		case !found:
			return fmt.Errorf("create purchase %s: %w", p.ID, purchase.ErrIntensiveNotFound)
		default:
			return purchase.ErrIntensiveFull
		}
	case tc.failed(purchaseCreatePurchase):
		return fmt.Errorf("create purchase %s: purchase id already used", p.ID)
	default:
		return fmt.Errorf("create purchase %s: event id %s already used in the outbox", p.ID, c.Event.EventID)
	}
}

// Get reads a purchase with a strongly consistent read.
func (s *Purchases) Get(ctx context.Context, id string) (purchase.Purchase, error) {
	p, _, err := s.get(ctx, id)
	return p, err
}

func (s *Purchases) get(ctx context.Context, id string) (purchase.Purchase, int64, error) {
	it, err := readItem[purchaseItem](ctx, s.base, itemKey(purchaseKey(id)), "purchase "+id, club.ErrNotFound)
	if err != nil {
		return purchase.Purchase{}, 0, err
	}
	p, err := it.purchase()
	if err != nil {
		return purchase.Purchase{}, 0, fmt.Errorf("decode purchase %s: %w", id, err)
	}
	return p, it.Version, nil
}

// updateAttempts bounds Update's optimistic retries: a purchase has few
// writers (its saga and the provider's webhooks), so losing five races in
// a row means something is hammering the row.
const updateAttempts = 5

// Update is an optimistic read-modify-write (see purchase.Store): the row
// is replaced conditionally on its version and on the status it was read
// in, in one transaction with the seat effect of the status change. A
// change without a seat effect is a single conditional PutItem.
func (s *Purchases) Update(ctx context.Context, id string, change func(*purchase.Purchase) error) (purchase.Purchase, error) {
	for attempt := 1; attempt <= updateAttempts; attempt++ {
		before, version, err := s.get(ctx, id)
		if err != nil {
			return purchase.Purchase{}, err
		}
		after := purchase.FromSnapshot(before.Snapshot())
		if err := change(&after); err != nil {
			return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, err)
		}
		if after.Equal(before) {
			return after, nil // an exact repeat: nothing to write
		}
		err = s.write(ctx, before, after, version)
		var lost *lostRace
		if errors.As(err, &lost) {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, err)
			}
			continue
		}
		if err != nil {
			return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, err)
		}
		return after, nil
	}
	return purchase.Purchase{}, fmt.Errorf("update purchase %s: %d attempts: %w", id, updateAttempts, club.ErrContention)
}

// lostRace: the row changed between read and write.
type lostRace struct{}

func (*lostRace) Error() string { return "the purchase changed since it was read" }

// The update transaction's items.
const (
	purchaseUpdateRow = iota
	purchaseUpdateSeats
	purchaseUpdateAccess
)

func (s *Purchases) write(ctx context.Context, before, after purchase.Purchase, version int64) error {
	item, err := attributevalue.MarshalMap(newPurchaseItem(after.Snapshot(), version+1))
	if err != nil {
		return err
	}
	put := &types.Put{
		TableName:                aws.String(s.cfg.ClubTable),
		Item:                     item,
		ConditionExpression:      aws.String("#version = :version AND #status = :from"),
		ExpressionAttributeNames: map[string]string{"#version": "version", "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":version": num(version), ":from": str(string(before.Status())),
		},
	}
	effect := purchase.SeatUnchanged
	if before.Status() != after.Status() {
		var ok bool
		if effect, ok = purchase.SeatEffectBetween(before, after); !ok {
			// The domain refuses these; writing one would break the counters.
			return &purchase.TransitionError{From: before.Status(), To: after.Status()}
		}
	}
	raised := after.Events()
	if effect == purchase.SeatUnchanged && len(raised) == 0 {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
			ExpressionAttributeNames: put.ExpressionAttributeNames, ExpressionAttributeValues: put.ExpressionAttributeValues,
		})
		if isConditionFailed(err) {
			return &lostRace{}
		}
		return err
	}

	items := []types.TransactWriteItem{{Put: put}}
	// The events the change raised (refund.requested) go to the outbox with
	// it, so whatever the change promises has an owner once it commits.
	// They come last: the indexes below name the row, seats and access.
	var outboxItems []types.TransactWriteItem
	for _, env := range raised {
		out, err := outboxPut(s.cfg.OutboxTable, env, lastTransition(after))
		if err != nil {
			return err
		}
		outboxItems = append(outboxItems, types.TransactWriteItem{Put: out})
	}
	if effect == purchase.SeatUnchanged {
		return s.commitUpdate(ctx, append(items, outboxItems...), after)
	}
	seats := &types.Update{
		TableName:                 aws.String(s.cfg.ClubTable),
		Key:                       itemKey(intensiveKey(after.IntensiveID())),
		ConditionExpression:       aws.String("#held > :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":zero": num(0)},
	}
	switch effect {
	case purchase.SeatReleased:
		seats.UpdateExpression = aws.String("SET #held = #held - :one, #free = #free + :one")
		seats.ExpressionAttributeNames = map[string]string{"#held": "seats_held", "#free": "seats_free"}
	case purchase.SeatTaken:
		seats.UpdateExpression = aws.String("SET #held = #held - :one, #taken = #taken + :one")
		seats.ExpressionAttributeNames = map[string]string{"#held": "seats_held", "#taken": "seats_taken"}
	}
	items = append(items, types.TransactWriteItem{Update: seats})
	if effect == purchase.SeatTaken {
		pk, sk := accessKey(after.IntensiveID(), after.StudentID())
		access, err := attributevalue.MarshalMap(accessItem{
			PK: pk, SK: sk, Entity: "access", IntensiveID: after.IntensiveID(), StudentID: after.StudentID(),
			PurchaseID: after.ID(), GrantedAt: formatTime(lastTransition(after)),
		})
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.cfg.ClubTable), Item: access, ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}})
	}

	return s.commitUpdate(ctx, append(items, outboxItems...), after)
}

// commitUpdate runs the update transaction and classifies its cancellation.
func (s *Purchases) commitUpdate(ctx context.Context, items []types.TransactWriteItem, after purchase.Purchase) error {
	err := s.transact(ctx, items)
	var tc *txCancelled
	if !errors.As(err, &tc) {
		return err
	}
	switch {
	case tc.failed(purchaseUpdateRow):
		return &lostRace{}
	case len(items) > purchaseUpdateAccess && items[purchaseUpdateAccess].Put != nil &&
		aws.ToString(items[purchaseUpdateAccess].Put.TableName) == s.cfg.ClubTable && tc.failed(purchaseUpdateAccess):
		return purchase.ErrAlreadyHasAccess
	case len(items) > purchaseUpdateSeats && items[purchaseUpdateSeats].Update != nil && tc.failed(purchaseUpdateSeats):
		return fmt.Errorf("intensive %s has no held seat for purchase %s (invariant broken)", after.IntensiveID(), after.ID())
	default:
		return fmt.Errorf("update purchase %s: %w", after.ID(), err)
	}
}

func lastTransition(p purchase.Purchase) time.Time {
	h := p.History()
	return h[len(h)-1].At
}

func newPurchaseItem(p purchase.Snapshot, version int64) purchaseItem {
	pk, sk := purchaseKey(p.ID)
	history := make([]historyItem, len(p.History))
	for i, h := range p.History {
		history[i] = historyItem{Status: string(h.Status), At: formatTime(h.At), By: h.By, Reason: h.Reason}
	}
	var refunds []refundItem
	for _, r := range p.Refunds {
		refunds = append(refunds, refundItem{Key: r.Key, RefundID: r.RefundID, Status: string(r.Status), RequestedAt: formatTime(r.RequestedAt)})
	}
	var current refundItem
	if len(refunds) > 0 {
		current = refunds[len(refunds)-1]
	}
	return purchaseItem{
		PK: pk, SK: sk, Entity: "purchase",
		PurchaseID: p.ID, IntensiveID: p.IntensiveID, StudentID: p.StudentID,
		AmountCents: p.Price.AmountCents, Currency: p.Price.Currency,
		Status: string(p.Status), CreatedAt: formatTime(p.CreatedAt), HoldExpiresAt: formatTime(p.HoldExpiresAt),
		PaymentID: p.PaymentID, CheckoutURL: p.CheckoutURL, PaymentStatus: string(p.PaymentStatus),
		RefundID: current.RefundID, RefundStatus: current.Status, Refunds: refunds, LatePayment: p.LatePayment,
		TaskToken: p.TaskToken, Note: p.Note, History: history, Version: version,
	}
}

func (it purchaseItem) purchase() (purchase.Purchase, error) {
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return purchase.Purchase{}, err
	}
	expires, err := parseTime("hold_expires_at", it.HoldExpiresAt)
	if err != nil {
		return purchase.Purchase{}, err
	}
	history := make([]purchase.HistoryEntry, len(it.History))
	for i, h := range it.History {
		at, err := parseTime("history.at", h.At)
		if err != nil {
			return purchase.Purchase{}, err
		}
		history[i] = purchase.HistoryEntry{Status: purchase.Status(h.Status), At: at, By: h.By, Reason: h.Reason}
	}
	refunds, err := it.refunds(history)
	if err != nil {
		return purchase.Purchase{}, err
	}
	return purchase.FromSnapshot(purchase.Snapshot{
		ID: it.PurchaseID, IntensiveID: it.IntensiveID, StudentID: it.StudentID,
		Price:  purchase.Price{AmountCents: it.AmountCents, Currency: it.Currency},
		Status: purchase.Status(it.Status), CreatedAt: created, HoldExpiresAt: expires,
		PaymentID: it.PaymentID, CheckoutURL: it.CheckoutURL, PaymentStatus: purchase.ProviderStatus(it.PaymentStatus),
		Refunds: refunds, LatePayment: it.LatePayment,
		TaskToken: it.TaskToken, Note: it.Note, History: history,
	}), nil
}

// refunds reads the refund attempts. A row written before refunds had
// attempts (refund_id and refund_status only) that recorded a refund
// intent has one attempt, under the key its refund was asked with.
func (it purchaseItem) refunds(history []purchase.HistoryEntry) ([]purchase.RefundAttempt, error) {
	var out []purchase.RefundAttempt
	for _, r := range it.Refunds {
		at, err := parseTime("refunds.requested_at", r.RequestedAt)
		if err != nil {
			return nil, err
		}
		out = append(out, purchase.RefundAttempt{Key: r.Key, RefundID: r.RefundID, Status: purchase.ProviderStatus(r.Status), RequestedAt: at})
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, h := range history {
		if h.Status == purchase.StatusRefundPending {
			return []purchase.RefundAttempt{{
				Key: purchase.LegacyRefundKey(it.PurchaseID), RefundID: it.RefundID,
				Status: purchase.ProviderStatus(it.RefundStatus), RequestedAt: h.At,
			}}, nil
		}
	}
	return nil, nil
}
