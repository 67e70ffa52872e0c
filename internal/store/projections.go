package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club/projection"
)

// rosterItem is a roster entry (sk "ROSTER#<enrollment id>") or the meta
// item (sk "ROSTER") that held as_of before the entries did; both carry
// as_of, the time of the projection's write.
type rosterItem struct {
	SK          string `dynamodbav:"sk"`
	StudentID   string `dynamodbav:"student_id"`
	EnrolledAt  string `dynamodbav:"enrolled_at"`
	CancelledAt string `dynamodbav:"cancelled_at"`
	AsOf        string `dynamodbav:"as_of"`
}

type statsItem struct {
	EnrollmentsTotal   int64 `dynamodbav:"enrollments_total"`
	CancellationsTotal int64 `dynamodbav:"cancellations_total"`
}

// Projections implements projection.Reader on the club table.
type Projections struct{ *base }

var _ projection.Reader = (*Projections)(nil)

// Roster reads every entry of the class's partition in one paginated query
// (strongly consistent), lists the entries that were added and not removed,
// and takes as the roster's as-of the latest as_of among them (and the meta
// item's, which rosters written before the entries carried it have).
func (s *Projections) Roster(ctx context.Context, classID string) (projection.Roster, error) {
	pk, metaSK := rosterMetaKey(classID)
	r := projection.Roster{ClassID: classID, Students: []projection.Student{}}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.ClubTable),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pk), ":prefix": str(metaSK),
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return projection.Roster{}, fmt.Errorf("roster of class %s: %w", classID, err)
		}
		for _, item := range out.Items {
			var it rosterItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return projection.Roster{}, fmt.Errorf("decode roster of class %s: %w", classID, err)
			}
			if it.AsOf != "" {
				asOf, err := parseTime("as_of", it.AsOf)
				if err != nil {
					return projection.Roster{}, fmt.Errorf("decode roster of class %s: %w", classID, err)
				}
				if asOf.After(r.AsOf) {
					r.AsOf = asOf
				}
			}
			switch {
			case strings.HasPrefix(it.SK, rosterEntryPrefix) && it.EnrolledAt != "" && it.CancelledAt == "":
				at, err := parseTime("enrolled_at", it.EnrolledAt)
				if err != nil {
					return projection.Roster{}, fmt.Errorf("decode roster of class %s: %w", classID, err)
				}
				r.Students = append(r.Students, projection.Student{StudentID: it.StudentID, EnrolledAt: at})
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	projection.SortStudents(r.Students)
	return r, nil
}

// Stats reads the class's counters (zero if no event was counted yet) with
// an eventually consistent read, which DynamoDB bills at half a strongly
// consistent one. That is safe here: the counters are a projection the
// analytics consumer keeps behind the enrollments by the pipeline's delay,
// and the API says so (GET /classes/{id}/stats); a copy that missed the
// last second of its writes is the same promise, a second later. Only that
// read uses Stats; nothing decides on it — seats, money and duplicates are
// decided by conditional writes and consistent reads elsewhere.
func (s *Projections) Stats(ctx context.Context, classID string) (projection.Stats, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.cfg.ClubTable), Key: itemKey(statsKey(classID)),
	})
	if err != nil {
		return projection.Stats{}, fmt.Errorf("stats of class %s: %w", classID, err)
	}
	st := projection.Stats{ClassID: classID}
	item := out.Item
	if len(item) == 0 {
		return st, nil
	}
	var it statsItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return projection.Stats{}, fmt.Errorf("decode stats of class %s: %w", classID, err)
	}
	st.EnrollmentsTotal, st.CancellationsTotal = it.EnrollmentsTotal, it.CancellationsTotal
	return st, nil
}
