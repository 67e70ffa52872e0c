package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
)

type classItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Entity     string `dynamodbav:"entity"`
	ClassID    string `dynamodbav:"class_id"`
	TeacherID  string `dynamodbav:"teacher_id"`
	Title      string `dynamodbav:"title"`
	Capacity   int    `dynamodbav:"capacity"`
	SeatsTaken int    `dynamodbav:"seats_taken"` // never omitted: the seat condition compares it
	StartsAt   string `dynamodbav:"starts_at"`
	// ClassTeacher is teacher_id again, under the name that puts class items,
	// and only them, in the classes_by_teacher index.
	ClassTeacher string `dynamodbav:"class_teacher_id"`
}

// Classes implements class.Repository on the club table.
type Classes struct{ *base }

var _ class.Repository = (*Classes)(nil)

// Create puts the class only if its id is unused.
func (s *Classes) Create(ctx context.Context, c class.Class) error {
	snap := c.Snapshot()
	pk, sk := classKey(snap.ID)
	item, err := attributevalue.MarshalMap(classItem{
		PK: pk, SK: sk, Entity: "class",
		ClassID: snap.ID, TeacherID: snap.TeacherID, Title: snap.Title,
		Capacity: snap.Capacity, SeatsTaken: snap.SeatsTaken, StartsAt: formatTime(snap.StartsAt),
		ClassTeacher: snap.TeacherID,
	})
	if err != nil {
		return fmt.Errorf("create class %s: %w", snap.ID, err)
	}
	created, err := s.putNew(ctx, item)
	if err != nil {
		return fmt.Errorf("create class %s: %w", snap.ID, err)
	}
	if !created {
		return fmt.Errorf("create class %s: already exists", snap.ID)
	}
	return nil
}

// Get reads the class with a strongly consistent read.
func (s *Classes) Get(ctx context.Context, id string) (class.Class, error) {
	it, err := readItem[classItem](ctx, s.base, itemKey(classKey(id)), "class "+id, club.ErrClassNotFound)
	if err != nil {
		return class.Class{}, err
	}
	startsAt, err := parseTime("starts_at", it.StartsAt)
	if err != nil {
		return class.Class{}, fmt.Errorf("decode class %s: %w", id, err)
	}
	return class.FromSnapshot(class.Snapshot{
		ID: it.ClassID, TeacherID: it.TeacherID, Title: it.Title,
		Capacity: it.Capacity, SeatsTaken: it.SeatsTaken, StartsAt: startsAt,
	}), nil
}
