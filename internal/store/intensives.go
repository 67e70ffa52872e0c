package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/clubdev/club/internal/club/purchase"
)

// Keys of the purchase domain's items (see doc.go). An intensive's seat
// counters and the access items of its students share its partition.
func intensiveKey(id string) (pk, sk string) { return "INTENSIVE#" + id, "INTENSIVE" }
func accessKey(intensiveID, studentID string) (pk, sk string) {
	return "INTENSIVE#" + intensiveID, "ACCESS#" + studentID
}
func purchaseKey(id string) (pk, sk string) { return "PURCHASE#" + id, "PURCHASE" }

type intensiveItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Entity      string `dynamodbav:"entity"`
	IntensiveID string `dynamodbav:"intensive_id"`
	TeacherID   string `dynamodbav:"teacher_id"`
	Title       string `dynamodbav:"title"`
	Capacity    int    `dynamodbav:"capacity"`
	// SeatsFree is the counter the hold's condition compares (a condition
	// cannot add taken and held); free + held + taken = capacity. None of
	// the three is ever omitted.
	SeatsFree   int    `dynamodbav:"seats_free"`
	SeatsHeld   int    `dynamodbav:"seats_held"`
	SeatsTaken  int    `dynamodbav:"seats_taken"`
	AmountCents int64  `dynamodbav:"amount_cents"`
	Currency    string `dynamodbav:"currency"`
	HoldSeconds int    `dynamodbav:"hold_seconds"`
	CreatedAt   string `dynamodbav:"created_at"`
}

// Intensives implements purchase.IntensiveRepository on the club table.
type Intensives struct{ *base }

var _ purchase.IntensiveRepository = (*Intensives)(nil)

// Create puts the intensive only if its id is unused.
func (s *Intensives) Create(ctx context.Context, in purchase.Intensive) error {
	snap := in.Snapshot()
	pk, sk := intensiveKey(snap.ID)
	item, err := attributevalue.MarshalMap(intensiveItem{
		PK: pk, SK: sk, Entity: "intensive",
		IntensiveID: snap.ID, TeacherID: snap.TeacherID, Title: snap.Title, Capacity: snap.Capacity,
		SeatsFree: snap.Capacity - snap.SeatsHeld - snap.SeatsTaken,
		SeatsHeld: snap.SeatsHeld, SeatsTaken: snap.SeatsTaken,
		AmountCents: snap.Price.AmountCents, Currency: snap.Price.Currency,
		HoldSeconds: snap.HoldSeconds, CreatedAt: formatTime(snap.CreatedAt),
	})
	if err != nil {
		return fmt.Errorf("create intensive %s: %w", snap.ID, err)
	}
	created, err := s.putNew(ctx, item)
	if err != nil {
		return fmt.Errorf("create intensive %s: %w", snap.ID, err)
	}
	if !created {
		return fmt.Errorf("create intensive %s: already exists", snap.ID)
	}
	return nil
}

// Get reads the intensive with a strongly consistent read.
func (s *Intensives) Get(ctx context.Context, id string) (purchase.Intensive, error) {
	it, err := readItem[intensiveItem](ctx, s.base, itemKey(intensiveKey(id)), "intensive "+id, purchase.ErrIntensiveNotFound)
	if err != nil {
		return purchase.Intensive{}, err
	}
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return purchase.Intensive{}, fmt.Errorf("decode intensive %s: %w", id, err)
	}
	return purchase.IntensiveFromSnapshot(purchase.IntensiveSnapshot{
		ID: it.IntensiveID, TeacherID: it.TeacherID, Title: it.Title, Capacity: it.Capacity,
		SeatsHeld: it.SeatsHeld, SeatsTaken: it.SeatsTaken,
		Price:       purchase.Price{AmountCents: it.AmountCents, Currency: it.Currency},
		HoldSeconds: it.HoldSeconds, CreatedAt: created,
	}), nil
}
