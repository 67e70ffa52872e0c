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

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/projection"
)

// The teacher report's reads (bulk work): both go through the sparse
// classes_by_teacher index (class_teacher_id + starts_at, keys only), a page
// at a time, so neither ever walks the whole table nor holds more than a
// page.

// MaxTeacherClassesPage bounds a page of Projections.TeacherClasses: each
// class is two keys of one BatchGetItem, which reads at most 100.
const MaxTeacherClassesPage = 50

// MaxTeachersPage bounds a page of Classes.Teachers (index entries read).
const MaxTeachersPage = 1000

// batchGetAttempts bounds the rounds of a BatchGetItem whose keys DynamoDB
// left unprocessed (throttling); then the read fails, transiently.
const batchGetAttempts = 5

// Teachers reads one page of the classes_by_teacher index (at most limit
// entries) and returns the teachers it names, in index order without
// repeats, and the cursor of the next page ("" after the last). A teacher
// with many classes may appear on several pages; the index keeps one
// teacher's classes together, so mostly on one.
func (s *Classes) Teachers(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	if limit < 1 || limit > MaxTeachersPage {
		return nil, "", fmt.Errorf("teachers: page size %d is outside 1..%d", limit, MaxTeachersPage)
	}
	in := &dynamodb.ScanInput{
		TableName: aws.String(s.cfg.ClubTable),
		IndexName: aws.String(indexClassesByTeacher),
		// Redundant on AWS (the index holds class items only); it keeps
		// the answer the same where an emulator scans the table instead.
		FilterExpression:         aws.String("attribute_exists(#teacher)"),
		ProjectionExpression:     aws.String("#teacher"),
		ExpressionAttributeNames: map[string]string{"#teacher": attrClassTeacher},
		Limit:                    aws.Int32(int32(limit)),
	}
	if cursor != "" {
		start, err := indexStartKey(cursor, nil)
		if err != nil {
			return nil, "", fmt.Errorf("teachers: %w", err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.db.Scan(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("teachers: scan %s: %w", indexClassesByTeacher, err)
	}
	var teachers []string
	seen := map[string]bool{}
	for _, item := range out.Items {
		v, ok := item[attrClassTeacher].(*types.AttributeValueMemberS)
		if !ok || v.Value == "" || seen[v.Value] {
			continue
		}
		seen[v.Value] = true
		teachers = append(teachers, v.Value)
	}
	next, err := encodeCursor(out.LastEvaluatedKey)
	if err != nil {
		return nil, "", fmt.Errorf("teachers: %w", err)
	}
	return teachers, next, nil
}

// TeacherClasses returns one page (at most limit) of teacherID's classes in
// start order, each with its counters, and the cursor of the next page (""
// after the last): one Query of the classes_by_teacher index, then one
// BatchGetItem of the classes and their stats (strongly consistent). A
// class that has no counters yet counts zero.
func (s *Projections) TeacherClasses(ctx context.Context, teacherID, cursor string, limit int) ([]projection.ClassSummary, string, error) {
	if limit < 1 || limit > MaxTeacherClassesPage {
		return nil, "", fmt.Errorf("classes of %s: page size %d is outside 1..%d", teacherID, limit, MaxTeacherClassesPage)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.ClubTable),
		IndexName:                 aws.String(indexClassesByTeacher),
		KeyConditionExpression:    aws.String("#teacher = :teacher"),
		ExpressionAttributeNames:  map[string]string{"#teacher": attrClassTeacher},
		ExpressionAttributeValues: map[string]types.AttributeValue{":teacher": str(teacherID)},
		Limit:                     aws.Int32(int32(limit)),
	}
	if cursor != "" {
		start, err := indexStartKey(cursor, map[string]string{attrClassTeacher: teacherID})
		if err != nil {
			return nil, "", fmt.Errorf("classes of %s: %w", teacherID, err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("classes of %s: query %s: %w", teacherID, indexClassesByTeacher, err)
	}
	var ids []string
	for _, item := range out.Items {
		if pk, ok := item[attrPK].(*types.AttributeValueMemberS); ok {
			if id, found := strings.CutPrefix(pk.Value, "CLASS#"); found {
				ids = append(ids, id)
			}
		}
	}
	summaries, err := s.classSummaries(ctx, ids)
	if err != nil {
		return nil, "", fmt.Errorf("classes of %s: %w", teacherID, err)
	}
	next, err := encodeCursor(out.LastEvaluatedKey)
	if err != nil {
		return nil, "", fmt.Errorf("classes of %s: %w", teacherID, err)
	}
	return summaries, next, nil
}

// classSummaries reads the class and stats items of ids in one
// BatchGetItem (again for keys left unprocessed) and returns the classes in
// the order of ids; a class deleted since the index was read is left out.
func (s *Projections) classSummaries(ctx context.Context, ids []string) ([]projection.ClassSummary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]map[string]types.AttributeValue, 0, 2*len(ids))
	for _, id := range ids {
		keys = append(keys, itemKey(classKey(id)), itemKey(statsKey(id)))
	}
	classes := map[string]classItem{}
	stats := map[string]statsItem{}
	for attempt := 1; len(keys) > 0; attempt++ {
		if attempt > batchGetAttempts {
			return nil, fmt.Errorf("read %d classes: %d keys still unprocessed after %d attempts: %w",
				len(ids), len(keys), batchGetAttempts, club.ErrContention)
		}
		if attempt > 1 {
			if err := sleep(ctx, backoff(attempt-1)); err != nil {
				return nil, err
			}
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.cfg.ClubTable: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, fmt.Errorf("read %d classes: %w", len(ids), err)
		}
		for _, item := range out.Responses[s.cfg.ClubTable] {
			pk, _ := item[attrPK].(*types.AttributeValueMemberS)
			sk, _ := item[attrSK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil {
				continue
			}
			id := strings.TrimPrefix(pk.Value, "CLASS#")
			switch sk.Value {
			case "CLASS":
				var it classItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return nil, fmt.Errorf("decode class %s: %w", id, err)
				}
				classes[id] = it
			case "STATS":
				var it statsItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return nil, fmt.Errorf("decode stats of class %s: %w", id, err)
				}
				stats[id] = it
			}
		}
		keys = out.UnprocessedKeys[s.cfg.ClubTable].Keys
	}
	summaries := make([]projection.ClassSummary, 0, len(ids))
	for _, id := range ids {
		c, ok := classes[id]
		if !ok {
			continue
		}
		startsAt, err := parseTime("starts_at", c.StartsAt)
		if err != nil {
			return nil, fmt.Errorf("decode class %s: %w", id, err)
		}
		st := stats[id]
		summaries = append(summaries, projection.ClassSummary{
			ClassID: c.ClassID, Title: c.Title, Capacity: c.Capacity, SeatsTaken: c.SeatsTaken, StartsAt: startsAt,
			Stats: projection.Stats{ClassID: id, EnrollmentsTotal: st.EnrollmentsTotal, CancellationsTotal: st.CancellationsTotal},
		})
	}
	return summaries, nil
}

// errForeignCursor: a cursor of another read (another teacher, another
// user) was handed back.
var errForeignCursor = errors.New("the cursor belongs to another list")

// indexStartKey rebuilds an ExclusiveStartKey from a cursor: only the
// table's and the index's key attributes, and each attribute in fixed
// (the partition of the read) equal to its value there.
func indexStartKey(cursor string, fixed map[string]string) (map[string]types.AttributeValue, error) {
	values, err := decodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	if values[attrPK] == "" || values[attrSK] == "" {
		return nil, errNotACursor
	}
	key := make(map[string]types.AttributeValue, len(values))
	for name, v := range values {
		switch name {
		case attrPK, attrSK, attrClassTeacher, attrStartsAt, attrCreatedBy, attrCreatedAt:
			key[name] = str(v)
		default:
			return nil, errNotACursor
		}
	}
	for name, want := range fixed {
		if got, ok := values[name]; ok && got != want {
			return nil, errForeignCursor
		}
		key[name] = str(want)
	}
	return key, nil
}
