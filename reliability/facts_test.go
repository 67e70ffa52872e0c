package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// The facts are read from the stores themselves, not from the API: the API
// could hide a duplicate that the tables hold.

// enrollmentRow is an enrollment as the club table holds it.
type enrollmentRow struct {
	EnrollmentID       string `dynamodbav:"enrollment_id"`
	ClassID            string `dynamodbav:"class_id"`
	StudentID          string `dynamodbav:"student_id"`
	Status             string `dynamodbav:"status"`
	NotificationStatus string `dynamodbav:"notification_status"`
}

// intentRow is an enrollment.created row of the outbox table.
type intentRow struct {
	EventID     string `dynamodbav:"event_id"`
	AggregateID string `dynamodbav:"aggregate_id"`
	Payload     string `dynamodbav:"payload"`
	Status      string `dynamodbav:"status"`
	classID     string
}

func scan(t *testing.T, in *dynamodb.ScanInput, each func(map[string]ddbtypes.AttributeValue)) {
	t.Helper()
	// The facts are read consistently: a read without ConsistentRead may
	// miss a write that completed a moment ago (the adversary's
	// ddb.stale_read does this).
	if in.IndexName == nil {
		in.ConsistentRead = aws.Bool(true)
	}
	p := dynamodb.NewScanPaginator(stack.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		for _, item := range page.Items {
			each(item)
		}
	}
}

// enrollmentsByClass reads every enrollment of the club table.
func enrollmentsByClass(t *testing.T) map[string][]enrollmentRow {
	t.Helper()
	out := map[string][]enrollmentRow{}
	scan(t, &dynamodb.ScanInput{
		TableName:                 aws.String(stack.file.Tables["ClubTable"]),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "ENROLLMENT#"}},
	}, func(item map[string]ddbtypes.AttributeValue) {
		var e enrollmentRow
		require.NoError(t, attributevalue.UnmarshalMap(item, &e))
		out[e.ClassID] = append(out[e.ClassID], e)
	})
	return out
}

// intentsByClass reads every enrollment.created row of the outbox table.
func intentsByClass(t *testing.T) map[string][]intentRow {
	t.Helper()
	out := map[string][]intentRow{}
	scan(t, &dynamodb.ScanInput{
		TableName:                 aws.String(stack.file.Tables["OutboxTable"]),
		FilterExpression:          aws.String("#t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": "type"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":t": &ddbtypes.AttributeValueMemberS{Value: "enrollment.created"}},
	}, func(item map[string]ddbtypes.AttributeValue) {
		var r intentRow
		require.NoError(t, attributevalue.UnmarshalMap(item, &r))
		var env struct {
			Data struct {
				ClassID string `json:"class_id"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Payload), &env), "outbox row %s", r.EventID)
		r.classID = env.Data.ClassID
		out[r.classID] = append(out[r.classID], r)
	})
	return out
}

// pendingIntents counts outbox rows of any type not yet marked published.
func pendingIntents(t *testing.T) int {
	t.Helper()
	n := 0
	scan(t, &dynamodb.ScanInput{
		TableName:                 aws.String(stack.file.Tables["OutboxTable"]),
		FilterExpression:          aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: "pending"}},
	}, func(map[string]ddbtypes.AttributeValue) { n++ })
	return n
}

// classFacts are the business facts of one class.
type classFacts struct {
	classID     string
	enrollments []enrollmentRow
	intents     []intentRow
	// counted is the class's enrollments_total; roster its listed students.
	counted int
	roster  []string
	// mails counts the messages accepted for each enrolled student.
	mails map[string]int
}

// readFacts gathers the facts of classes (taught by teacher) from the
// tables, the projections and the mail provider. enrollments, intents and
// mail may be read once for many classes and passed in.
func readFacts(t *testing.T, teacher user, classID string, enrollments map[string][]enrollmentRow, intents map[string][]intentRow, mail map[string]int) classFacts {
	t.Helper()
	f := classFacts{classID: classID, enrollments: enrollments[classID], intents: intents[classID], mails: map[string]int{}}
	// The counter is read consistently from its item: the API reads it
	// eventually consistently (a projection's lag, a second more), which
	// may show an earlier count, and so hide one counted twice.
	var stats struct {
		EnrollmentsTotal int `dynamodbav:"enrollments_total"`
	}
	lookUp(t, "CLASS#"+classID, "STATS", &stats)
	f.counted = stats.EnrollmentsTotal
	r := call(t, teacher, http.MethodGet, "/classes/"+classID+"/roster", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	students, _ := r.body["students"].([]any)
	for _, s := range students {
		f.roster = append(f.roster, s.(map[string]any)["student_id"].(string))
	}
	for _, e := range f.enrollments {
		f.mails[e.StudentID] = mail[e.StudentID+"@example.com"]
	}
	return f
}

// mailCounts counts the accepted messages per address.
func mailCounts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range mails(t, "") {
		out[m.To]++
	}
	return out
}

// check returns every way f breaks the three facts, given the students
// who were told they are enrolled.
func (f classFacts) check(enrolled []string) []string {
	var broken []string
	intentsOf := map[string]int{}
	for _, r := range f.intents {
		intentsOf[r.AggregateID]++
	}
	byID := map[string]bool{}
	students := map[string]int{}
	for _, e := range f.enrollments {
		byID[e.EnrollmentID] = true
		students[e.StudentID]++
		if intentsOf[e.EnrollmentID] != 1 {
			broken = append(broken, fmt.Sprintf("enrollment %s has %d intents", e.EnrollmentID, intentsOf[e.EnrollmentID]))
		}
		if e.NotificationStatus != "sent" {
			broken = append(broken, fmt.Sprintf("enrollment %s: notification %s", e.EnrollmentID, e.NotificationStatus))
		}
		if f.mails[e.StudentID] != 1 {
			broken = append(broken, fmt.Sprintf("student %s got %d mails", e.StudentID, f.mails[e.StudentID]))
		}
	}
	for _, r := range f.intents {
		if !byID[r.AggregateID] {
			broken = append(broken, fmt.Sprintf("intent %s names enrollment %s, which does not exist", r.EventID, r.AggregateID))
		}
	}
	for _, s := range enrolled {
		if students[s] != 1 {
			broken = append(broken, fmt.Sprintf("student %s was answered 201 and holds %d enrollments", s, students[s]))
		}
	}
	if len(f.enrollments) != len(enrolled) {
		broken = append(broken, fmt.Sprintf("%d enrollments for %d students answered 201", len(f.enrollments), len(enrolled)))
	}
	if f.counted != len(f.enrollments) {
		broken = append(broken, fmt.Sprintf("counter says %d for %d enrollments", f.counted, len(f.enrollments)))
	}
	roster := append([]string(nil), f.roster...)
	want := append([]string(nil), enrolled...)
	sort.Strings(roster)
	sort.Strings(want)
	if strings.Join(roster, ",") != strings.Join(want, ",") {
		broken = append(broken, fmt.Sprintf("roster lists %d students for %d enrolled", len(roster), len(want)))
	}
	if len(broken) > 0 {
		broken = append([]string{"class " + f.classID + ":"}, broken...)
	}
	return broken
}
