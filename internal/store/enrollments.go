package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
)

type enrollmentItem struct {
	PK                   string `dynamodbav:"pk"`
	SK                   string `dynamodbav:"sk"`
	Entity               string `dynamodbav:"entity"`
	EnrollmentID         string `dynamodbav:"enrollment_id"`
	ClassID              string `dynamodbav:"class_id"`
	StudentID            string `dynamodbav:"student_id"`
	TeacherID            string `dynamodbav:"teacher_id"`
	Status               string `dynamodbav:"status"`
	CreatedAt            string `dynamodbav:"created_at"`
	CancelledAt          string `dynamodbav:"cancelled_at,omitempty"`
	NotificationStatus   string `dynamodbav:"notification_status"`
	NotificationAttempts int    `dynamodbav:"notification_attempts"`
	NotificationSentAt   string `dynamodbav:"notification_sent_at,omitempty"`
	// NotificationVersion guards the notifier's read-modify-write.
	NotificationVersion int64 `dynamodbav:"notification_version"`
	// CapturedEmail is set only under the at_enrollment address policy.
	CapturedEmail string `dynamodbav:"captured_email,omitempty"`
}

// memberItem is the student's claim on a seat of a class: its key is unique
// per (class, student), which is what makes a second enrollment fail.
type memberItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	Entity       string `dynamodbav:"entity"`
	ClassID      string `dynamodbav:"class_id"`
	StudentID    string `dynamodbav:"student_id"`
	EnrollmentID string `dynamodbav:"enrollment_id"`
}

// Enrollments implements enrollment.Store and enrollment.NotificationStore on
// the club and outbox tables.
type Enrollments struct {
	*base
	recent recentNotifications
}

var (
	_ enrollment.Store             = (*Enrollments)(nil)
	_ enrollment.NotificationStore = (*Enrollments)(nil)
)

// The create transaction's items, in an order that reads as the precedence of
// their errors.
const (
	createIdempotency = iota
	createMember
	createSeat
	createEnrollment
	createOutbox
)

// Create commits the enrollment in one TransactWriteItems (see
// enrollment.Store). No ClientRequestToken is sent: a retried call that had in
// fact committed fails on the idempotency record and is answered as a replay,
// which is what a token would give, without its 10-minute window.
func (s *Enrollments) Create(ctx context.Context, c enrollment.Creation) error {
	e := c.Enrollment.Snapshot()
	idem, err := s.idempotencyItem(c.Idempotency)
	if err != nil {
		return fmt.Errorf("create enrollment %s: %w", e.ID, err)
	}
	memberPK, memberSK := memberKey(e.ClassID, e.StudentID)
	member, err := attributevalue.MarshalMap(memberItem{
		PK: memberPK, SK: memberSK, Entity: "member",
		ClassID: e.ClassID, StudentID: e.StudentID, EnrollmentID: e.ID,
	})
	if err != nil {
		return fmt.Errorf("create enrollment %s: %w", e.ID, err)
	}
	enr, err := attributevalue.MarshalMap(newEnrollmentItem(e))
	if err != nil {
		return fmt.Errorf("create enrollment %s: %w", e.ID, err)
	}
	row, err := outbox.NewRow(c.Event, e.CreatedAt)
	if err != nil {
		return fmt.Errorf("create enrollment %s: %w", e.ID, err)
	}
	out, err := outboxPut(s.cfg.OutboxTable, row)
	if err != nil {
		return fmt.Errorf("create enrollment %s: %w", e.ID, err)
	}

	clubTable := aws.String(s.cfg.ClubTable)
	notExists := aws.String("attribute_not_exists(pk)")
	items := make([]types.TransactWriteItem, createOutbox+1)
	items[createIdempotency] = types.TransactWriteItem{Put: &types.Put{TableName: clubTable, Item: idem, ConditionExpression: notExists}}
	items[createMember] = types.TransactWriteItem{Put: &types.Put{TableName: clubTable, Item: member, ConditionExpression: notExists}}
	items[createSeat] = types.TransactWriteItem{Update: &types.Update{
		TableName:                 clubTable,
		Key:                       itemKey(classKey(e.ClassID)),
		UpdateExpression:          aws.String("SET #taken = #taken + :one"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND #taken < #capacity"),
		ExpressionAttributeNames:  map[string]string{"#taken": "seats_taken", "#capacity": "capacity"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
	}}
	items[createEnrollment] = types.TransactWriteItem{Put: &types.Put{TableName: clubTable, Item: enr, ConditionExpression: notExists}}
	items[createOutbox] = types.TransactWriteItem{Put: out}

	err = s.transact(ctx, items)
	var tc *txCancelled
	if !errors.As(err, &tc) {
		if err != nil {
			return fmt.Errorf("create enrollment %s: %w", e.ID, err)
		}
		return nil
	}
	switch {
	case tc.failed(createIdempotency):
		rec, err := s.readIdempotency(ctx, c.Idempotency.Caller, c.Idempotency.Key)
		if err != nil {
			return fmt.Errorf("create enrollment %s: lost to an existing idempotency record: %w", e.ID, err)
		}
		return &idempotency.ExistsError{Record: rec}
	case tc.failed(createMember):
		return club.ErrAlreadyEnrolled
	case tc.failed(createSeat):
		// The condition fails for a missing class and for a full one;
		// kumo returns no item with the cancellation, so read it.
		_, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(classKey(e.ClassID)))
		switch {
		case err != nil:
			return fmt.Errorf("create enrollment %s: read class: %w", e.ID, err)
		case !found:
			return club.ErrClassNotFound
		default:
			return club.ErrClassFull
		}
	case tc.failed(createEnrollment):
		return fmt.Errorf("create enrollment %s: enrollment id already used", e.ID)
	default:
		return fmt.Errorf("create enrollment %s: event id %s already used in the outbox", e.ID, row.EventID)
	}
}

func (s *Enrollments) readIdempotency(ctx context.Context, caller, key string) (idempotency.Record, error) {
	item, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(idempotencyKey(caller, key)))
	if err != nil {
		return idempotency.Record{}, err
	}
	if !found {
		// Only possible if TTL removed it between the two calls.
		return idempotency.Record{}, fmt.Errorf("record vanished: %w", club.ErrContention)
	}
	return decodeIdempotency(item)
}

// The cancel transaction's items.
const (
	cancelStatus = iota
	cancelSeat
	cancelMember
	cancelOutbox
)

// Cancel commits the cancellation in one TransactWriteItems (see
// enrollment.Store). It writes only the status fields of the enrollment; the
// notification fields belong to the notifier.
func (s *Enrollments) Cancel(ctx context.Context, c enrollment.Cancellation) error {
	e := c.Enrollment.Snapshot()
	row, err := outbox.NewRow(c.Event, e.CancelledAt)
	if err != nil {
		return fmt.Errorf("cancel enrollment %s: %w", e.ID, err)
	}
	out, err := outboxPut(s.cfg.OutboxTable, row)
	if err != nil {
		return fmt.Errorf("cancel enrollment %s: %w", e.ID, err)
	}
	clubTable := aws.String(s.cfg.ClubTable)
	items := make([]types.TransactWriteItem, cancelOutbox+1)
	items[cancelStatus] = types.TransactWriteItem{Update: &types.Update{
		TableName:                clubTable,
		Key:                      itemKey(enrollmentKey(e.ID)),
		UpdateExpression:         aws.String("SET #status = :cancelled, cancelled_at = :at"),
		ConditionExpression:      aws.String("#status = :enrolled"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cancelled": str(string(enrollment.StatusCancelled)),
			":enrolled":  str(string(enrollment.StatusEnrolled)),
			":at":        str(formatTime(e.CancelledAt)),
		},
	}}
	items[cancelSeat] = types.TransactWriteItem{Update: &types.Update{
		TableName:                 clubTable,
		Key:                       itemKey(classKey(e.ClassID)),
		UpdateExpression:          aws.String("SET #taken = #taken - :one"),
		ConditionExpression:       aws.String("#taken > :zero"),
		ExpressionAttributeNames:  map[string]string{"#taken": "seats_taken"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":zero": num(0)},
	}}
	items[cancelMember] = types.TransactWriteItem{Delete: &types.Delete{
		TableName:                 clubTable,
		Key:                       itemKey(memberKey(e.ClassID, e.StudentID)),
		ConditionExpression:       aws.String("enrollment_id = :eid"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":eid": str(e.ID)},
	}}
	items[cancelOutbox] = types.TransactWriteItem{Put: out}

	err = s.transact(ctx, items)
	var tc *txCancelled
	if !errors.As(err, &tc) {
		if err != nil {
			return fmt.Errorf("cancel enrollment %s: %w", e.ID, err)
		}
		return nil
	}
	switch {
	case tc.failed(cancelStatus):
		_, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(enrollmentKey(e.ID)))
		switch {
		case err != nil:
			return fmt.Errorf("cancel enrollment %s: %w", e.ID, err)
		case !found:
			return fmt.Errorf("cancel enrollment %s: %w", e.ID, club.ErrNotFound)
		default:
			return enrollment.ErrNotEnrolled
		}
	case tc.failed(cancelSeat):
		return fmt.Errorf("cancel enrollment %s: class %s has no seat taken (invariant broken)", e.ID, e.ClassID)
	case tc.failed(cancelMember):
		return fmt.Errorf("cancel enrollment %s: the student's claim on class %s belongs to another enrollment (invariant broken)", e.ID, e.ClassID)
	default:
		return fmt.Errorf("cancel enrollment %s: event id %s already used in the outbox", e.ID, row.EventID)
	}
}

// Get reads an enrollment with a strongly consistent read.
func (s *Enrollments) Get(ctx context.Context, id string) (enrollment.Enrollment, error) {
	e, _, err := s.get(ctx, id)
	return e, err
}

func (s *Enrollments) get(ctx context.Context, id string) (enrollment.Enrollment, int64, error) {
	it, err := readItem[enrollmentItem](ctx, s.base, itemKey(enrollmentKey(id)), "enrollment "+id, club.ErrNotFound)
	if err != nil {
		return enrollment.Enrollment{}, 0, err
	}
	e, err := it.enrollment()
	if err != nil {
		return enrollment.Enrollment{}, 0, fmt.Errorf("decode enrollment %s: %w", id, err)
	}
	return e, it.NotificationVersion, nil
}

const notificationAttempts = 5

// UpdateNotification is an optimistic read-modify-write on the notification
// fields, guarded by notification_version (see enrollment.NotificationStore).
// update may run more than once; it must depend only on its argument.
//
// The notifier changes a notification twice in a row (the attempt, then its
// outcome), so the store remembers the notification it last wrote for an
// enrollment and its version: the next change starts from it and skips the
// read. The write's condition on the version makes that safe — if anyone
// changed the notification in between, it fails and the change falls back to
// reading — and its ALL_NEW answer is the enrollment as stored afterwards.
func (s *Enrollments) UpdateNotification(ctx context.Context, id string, update func(*enrollment.Notification) error) (enrollment.Enrollment, error) {
	// Only a write is decided from memory; a refusal by update is decided
	// on what is stored.
	if n, version, ok := s.recent.take(id); ok && update(&n) == nil {
		e, err := s.writeNotification(ctx, id, n, version)
		switch {
		case err == nil:
			return e, nil
		case !isConditionFailed(err):
			return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %w", id, err)
		}
		// Changed elsewhere since: read it.
	}
	for attempt := 1; attempt <= notificationAttempts; attempt++ {
		e, version, err := s.get(ctx, id)
		if err != nil {
			return enrollment.Enrollment{}, err
		}
		n := e.Notification()
		if err := update(&n); err != nil {
			return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %w", id, err)
		}
		stored, err := s.writeNotification(ctx, id, n, version)
		if isConditionFailed(err) {
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %w", id, err)
			}
			continue
		}
		if err != nil {
			return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %w", id, err)
		}
		return stored, nil
	}
	return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %d attempts: %w", id, notificationAttempts, club.ErrContention)
}

// writeNotification writes n if the notification is still at version,
// remembers what it wrote and returns the enrollment as stored afterwards.
// A failed condition is returned as the SDK's error (see isConditionFailed).
func (s *Enrollments) writeNotification(ctx context.Context, id string, n enrollment.Notification, version int64) (enrollment.Enrollment, error) {
	expr := "SET notification_status = :status, notification_attempts = :attempts, notification_version = :next"
	values := map[string]types.AttributeValue{
		":status":   str(string(n.Status())),
		":attempts": num(int64(n.Attempts())),
		":next":     num(version + 1),
		":current":  num(version),
	}
	if !n.SentAt().IsZero() {
		expr += ", notification_sent_at = :sent"
		values[":sent"] = str(formatTime(n.SentAt()))
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.ClubTable),
		Key:                       itemKey(enrollmentKey(id)),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("notification_version = :current"),
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return enrollment.Enrollment{}, err
	}
	var it enrollmentItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return enrollment.Enrollment{}, fmt.Errorf("decode enrollment %s: %w", id, err)
	}
	e, err := it.enrollment()
	if err != nil {
		return enrollment.Enrollment{}, fmt.Errorf("decode enrollment %s: %w", id, err)
	}
	s.recent.put(id, e.Notification(), it.NotificationVersion)
	return e, nil
}

// recentNotifications remembers the notification last written per
// enrollment and its version, at most recentNotificationsSize of them (a
// full memory starts over). An entry is used once. Safe for concurrent use.
type recentNotifications struct {
	mu      sync.Mutex
	entries map[string]recentNotification
}

type recentNotification struct {
	n       enrollment.Notification
	version int64
}

const recentNotificationsSize = 1024

func (r *recentNotifications) take(id string) (enrollment.Notification, int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	delete(r.entries, id)
	return e.n, e.version, ok
}

func (r *recentNotifications) put(id string, n enrollment.Notification, version int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil || len(r.entries) >= recentNotificationsSize {
		r.entries = make(map[string]recentNotification)
	}
	r.entries[id] = recentNotification{n: n, version: version}
}

func newEnrollmentItem(e enrollment.Snapshot) enrollmentItem {
	pk, sk := enrollmentKey(e.ID)
	return enrollmentItem{
		PK: pk, SK: sk, Entity: "enrollment",
		EnrollmentID: e.ID, ClassID: e.ClassID, StudentID: e.StudentID, TeacherID: e.TeacherID,
		Status: string(e.Status), CreatedAt: formatTime(e.CreatedAt), CancelledAt: formatTime(e.CancelledAt),
		NotificationStatus:   string(e.NotificationStatus),
		NotificationAttempts: e.NotificationAttempts,
		NotificationSentAt:   formatTime(e.NotificationSentAt),
		CapturedEmail:        e.CapturedAddress,
	}
}

func (it enrollmentItem) enrollment() (enrollment.Enrollment, error) {
	var times [3]time.Time
	for i, f := range []struct{ name, value string }{
		{"created_at", it.CreatedAt}, {"cancelled_at", it.CancelledAt}, {"notification_sent_at", it.NotificationSentAt},
	} {
		t, err := parseTime(f.name, f.value)
		if err != nil {
			return enrollment.Enrollment{}, err
		}
		times[i] = t
	}
	return enrollment.FromSnapshot(enrollment.Snapshot{
		ID: it.EnrollmentID, ClassID: it.ClassID, StudentID: it.StudentID, TeacherID: it.TeacherID,
		Status: enrollment.Status(it.Status), CreatedAt: times[0], CancelledAt: times[1],
		NotificationStatus:   enrollment.NotificationStatus(it.NotificationStatus),
		NotificationAttempts: it.NotificationAttempts,
		NotificationSentAt:   times[2],
		CapturedAddress:      it.CapturedEmail,
	}), nil
}
