package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
)

type enrollmentItem struct {
	PK                    string `dynamodbav:"pk"`
	SK                    string `dynamodbav:"sk"`
	Entity                string `dynamodbav:"entity"`
	EnrollmentID          string `dynamodbav:"enrollment_id"`
	ClassID               string `dynamodbav:"class_id"`
	StudentID             string `dynamodbav:"student_id"`
	TeacherID             string `dynamodbav:"teacher_id"`
	Status                string `dynamodbav:"status"`
	CreatedAt             string `dynamodbav:"created_at"`
	CancelledAt           string `dynamodbav:"cancelled_at,omitempty"`
	NotificationStatus    string `dynamodbav:"notification_status"`
	NotificationAttempts  int    `dynamodbav:"notification_attempts"`
	NotificationSentAt    string `dynamodbav:"notification_sent_at,omitempty"`
	NotificationLastError string `dynamodbav:"notification_last_error,omitempty"`
	// NotificationAttemptToken names the write that counted the last
	// attempt (see ChangeNotification).
	NotificationAttemptToken string `dynamodbav:"notification_attempt_token,omitempty"`
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
type Enrollments struct{ *base }

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
	out, err := outboxPut(s.cfg.OutboxTable, c.Event, e.CreatedAt)
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
		return fmt.Errorf("create enrollment %s: event id %s already used in the outbox", e.ID, c.Event.EventID)
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
	out, err := outboxPut(s.cfg.OutboxTable, c.Event, e.CancelledAt)
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
		return fmt.Errorf("cancel enrollment %s: event id %s already used in the outbox", e.ID, c.Event.EventID)
	}
}

// Get reads an enrollment with a strongly consistent read.
func (s *Enrollments) Get(ctx context.Context, id string) (enrollment.Enrollment, error) {
	it, err := readItem[enrollmentItem](ctx, s.base, itemKey(enrollmentKey(id)), "enrollment "+id, club.ErrNotFound)
	if err != nil {
		return enrollment.Enrollment{}, err
	}
	e, err := it.enrollment()
	if err != nil {
		return enrollment.Enrollment{}, fmt.Errorf("decode enrollment %s: %w", id, err)
	}
	return e, nil
}

// notificationAttempts bounds ChangeNotification's rounds of writes when
// the notification keeps changing under it.
const notificationAttempts = 5

// ChangeNotification applies c with one conditional UpdateItem per case (see
// enrollment.NotificationStore): the first case whose condition holds
// writes, and its ALL_NEW answer is the enrollment as stored afterwards. The
// notifier's changes almost always match their first case (a new
// notification is pending), so a change costs one request; only when no case
// holds is the enrollment read, to tell a refusal, a status the change
// leaves alone and a missing enrollment apart.
//
// A change that counts an attempt is not carried out twice: the SDK retries
// a write whose answer was lost, and DynamoDB carries the retry out again,
// which would count the attempt twice (attempts count calls to the
// provider). The write names itself with a token, written beside the count
// and required to differ; a retry whose first run was carried out fails
// that condition, and the token stored says the write was this one.
func (s *Enrollments) ChangeNotification(ctx context.Context, id string, c enrollment.NotificationChange) (enrollment.Enrollment, error) {
	cases := c.Cases
	token := ""
	for _, k := range cases {
		if k.CountAttempt {
			token = events.NewID()
		}
	}
	for range notificationAttempts {
		for _, k := range cases {
			e, err := s.writeNotification(ctx, id, k, token)
			if err == nil {
				return e, nil
			}
			if !isConditionFailed(err) {
				return enrollment.Enrollment{}, fmt.Errorf("change notification of enrollment %s: %w", id, err)
			}
		}
		it, err := readItem[enrollmentItem](ctx, s.base, itemKey(enrollmentKey(id)), "enrollment "+id, club.ErrNotFound)
		if err != nil {
			return enrollment.Enrollment{}, err
		}
		e, err := it.enrollment()
		if err != nil {
			return enrollment.Enrollment{}, fmt.Errorf("decode enrollment %s: %w", id, err)
		}
		if token != "" && it.NotificationAttemptToken == token {
			return e, nil // written, and the answer lost: the retry met its own token
		}
		k, err := c.For(e.Notification().Status())
		if err != nil {
			return enrollment.Enrollment{}, fmt.Errorf("change notification of enrollment %s: %w", id, err)
		}
		if k == nil {
			return e, nil // nothing to change in this status
		}
		// The status changed between the writes and the read: write the
		// case for what is stored now.
		cases = []enrollment.NotificationCase{*k}
	}
	return enrollment.Enrollment{}, fmt.Errorf("change notification of enrollment %s: %d rounds: %w", id, notificationAttempts, club.ErrContention)
}

// writeNotification applies one case of a change if the stored status is
// one of its From, and returns the enrollment as stored afterwards. A failed
// condition (another status, or no such enrollment) is returned as the SDK's
// error (see isConditionFailed).
func (s *Enrollments) writeNotification(ctx context.Context, id string, k enrollment.NotificationCase, token string) (enrollment.Enrollment, error) {
	expr := "SET notification_status = :to"
	values := map[string]types.AttributeValue{":to": str(string(k.To))}
	from := make([]string, len(k.From))
	for i, st := range k.From {
		name := fmt.Sprintf(":from%d", i)
		from[i] = name
		values[name] = str(string(st))
	}
	if !k.SentAt.IsZero() {
		expr += ", notification_sent_at = :sent"
		values[":sent"] = str(formatTime(k.SentAt))
	}
	if k.LastError != "" && k.To != enrollment.NotificationSent {
		expr += ", notification_last_error = :lasterr"
		values[":lasterr"] = str(k.LastError)
	}
	cond := "notification_status IN (" + strings.Join(from, ", ") + ")"
	if k.CountAttempt {
		expr += ", notification_attempt_token = :token ADD notification_attempts :one"
		values[":one"], values[":token"] = num(1), str(token)
		cond += " AND (attribute_not_exists(notification_attempt_token) OR notification_attempt_token <> :token)"
	}
	if k.To == enrollment.NotificationSent {
		// Retention: an address captured at enrollment (at_enrollment
		// policy) is kept only until the mail is sent, and goes in the
		// write that says so. A failed mail keeps it: the dead letter's
		// redrive must still be able to send. A sent mail has no last
		// error.
		expr += " REMOVE captured_email, notification_last_error"
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.ClubTable),
		Key:                       itemKey(enrollmentKey(id)),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
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
	return e, nil
}

func newEnrollmentItem(e enrollment.Snapshot) enrollmentItem {
	pk, sk := enrollmentKey(e.ID)
	return enrollmentItem{
		PK: pk, SK: sk, Entity: "enrollment",
		EnrollmentID: e.ID, ClassID: e.ClassID, StudentID: e.StudentID, TeacherID: e.TeacherID,
		Status: string(e.Status), CreatedAt: formatTime(e.CreatedAt), CancelledAt: formatTime(e.CancelledAt),
		NotificationStatus:    string(e.NotificationStatus),
		NotificationAttempts:  e.NotificationAttempts,
		NotificationSentAt:    formatTime(e.NotificationSentAt),
		NotificationLastError: e.NotificationLastError,
		CapturedEmail:         e.CapturedAddress,
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
		NotificationStatus:    enrollment.NotificationStatus(it.NotificationStatus),
		NotificationAttempts:  it.NotificationAttempts,
		NotificationSentAt:    times[2],
		NotificationLastError: it.NotificationLastError,
		CapturedAddress:       it.CapturedEmail,
	}), nil
}
