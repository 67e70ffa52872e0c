package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/store"
)

// The teacher report's reads page through the classes_by_teacher index:
// every teacher with a class, and each teacher's classes in start order
// with their counters; nothing else in the table (enrollments carry a
// teacher_id too) shows up.
func TestTeacherReportReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t, store.Config{})
	stats := projection.NewStatsProjector(st.Inbox)

	newClass := func(teacher string, startsIn time.Duration) string {
		c, err := class.New(events.NewID(), teacher, "Class of "+teacher, 30, startsAt.Add(startsIn))
		require.NoError(t, err)
		require.NoError(t, st.Classes.Create(ctx, c))
		return c.ID()
	}
	count := func(classID string, enrolled, cancelled int) {
		for range enrolled {
			env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: events.NewID(), ClassID: classID, StudentID: "s"})
			require.NoError(t, err)
			require.NoError(t, stats.Apply(ctx, env))
		}
		for range cancelled {
			env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCancelled{EnrollmentID: events.NewID(), ClassID: classID, StudentID: "s"})
			require.NoError(t, err)
			require.NoError(t, stats.Apply(ctx, env))
		}
	}

	// teacher-1's classes, created out of start order, and one more that
	// has an enrollment item naming teacher-1.
	byDay := map[int]string{}
	for _, day := range []int{5, 1, 7, 3, 2, 6, 4} {
		byDay[day] = newClass("teacher-1", time.Duration(day)*24*time.Hour)
	}
	byDay[0] = enrollOne(t, st, time.Now).ClassID()
	count(byDay[1], 3, 1)
	other := newClass("teacher-2", 0)

	var all []projection.ClassSummary
	cursor := ""
	for pages := 1; ; pages++ {
		require.Less(t, pages, 10, "the pages end")
		page, next, err := st.Projections.TeacherClasses(ctx, "teacher-1", cursor, 3)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 3)
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	var got []string
	for _, c := range all {
		got = append(got, c.ClassID)
	}
	require.Equal(t, []string{byDay[0], byDay[1], byDay[2], byDay[3], byDay[4], byDay[5], byDay[6], byDay[7]}, got,
		"teacher-1's classes, each once, in start order")
	require.Equal(t, projection.ClassSummary{
		ClassID: byDay[1], Title: "Class of teacher-1", Capacity: 30, StartsAt: startsAt.Add(24 * time.Hour),
		Stats: projection.Stats{ClassID: byDay[1], EnrollmentsTotal: 3, CancellationsTotal: 1},
	}, all[1], "with its counters")
	require.Equal(t, 1, all[0].SeatsTaken, "the seat taken through the service")

	page, next, err := st.Projections.TeacherClasses(ctx, "teacher-2", "", store.MaxTeacherClassesPage)
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, page, 1)
	require.Equal(t, other, page[0].ClassID)
	require.Zero(t, page[0].Stats.EnrollmentsTotal, "no counters yet")

	page, next, err = st.Projections.TeacherClasses(ctx, "teacher-3", "", 10)
	require.NoError(t, err)
	require.Empty(t, page)
	require.Empty(t, next)

	_, _, err = st.Projections.TeacherClasses(ctx, "teacher-1", "", store.MaxTeacherClassesPage+1)
	require.ErrorContains(t, err, "page size")
	_, _, err = st.Projections.TeacherClasses(ctx, "teacher-1", "not-a-cursor", 3)
	require.ErrorContains(t, err, "not a cursor")

	// Every teacher with a class, page by page; a page never holds more
	// index entries than asked for.
	seen := map[string]int{}
	cursor = ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "the pages end")
		teachers, next, err := st.Classes.Teachers(ctx, cursor, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(teachers), 2)
		for _, id := range teachers {
			seen[id]++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.ElementsMatch(t, []string{"teacher-1", "teacher-2"}, mapKeys(seen))
	_, _, err = st.Classes.Teachers(ctx, "", store.MaxTeachersPage+1)
	require.ErrorContains(t, err, "page size")
}

func mapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Many teachers, one class each: every one is found, whatever the page.
func TestTeachersScanFindsEveryTeacher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newStore(t, store.Config{})
	var want []string
	for i := range 25 {
		teacher := fmt.Sprintf("teacher-%02d", i)
		c, err := class.New(events.NewID(), teacher, "Go", 3, startsAt)
		require.NoError(t, err)
		require.NoError(t, st.Classes.Create(ctx, c))
		want = append(want, teacher)
	}
	for _, size := range []int{1, 7, store.MaxTeachersPage} {
		var got []string
		cursor := ""
		for {
			teachers, next, err := st.Classes.Teachers(ctx, cursor, size)
			require.NoError(t, err)
			got = append(got, teachers...)
			if next == "" {
				break
			}
			cursor = next
		}
		require.ElementsMatch(t, want, got, "page size %d", size)
	}
}

// awsStartKeys answers a Query with a start key as AWS does when the key is
// not one of the index (kumo restarts the read instead).
type awsStartKeys struct{ store.DynamoDB }

func (a awsStartKeys) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if in.ExclusiveStartKey != nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "The provided starting key is invalid"}
	}
	return a.DynamoDB.Query(ctx, in, opts...)
}

// A cursor a client made up, well formed but not a key of the index, is a
// bad cursor (400), not a failure of the store (500).
func TestListRefusesAMadeUpCursorAsAWSDoes(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	st, err := store.New(awsStartKeys{client}, cfg)
	require.NoError(t, err)
	ops := st.Operations
	// {"pk":"OPERATION#x","sk":"OPERATION"}: no created_at, which AWS needs.
	_, err = ops.List(context.Background(), operation.ListQuery{CreatedBy: "t-1", Limit: 5, After: "eyJwayI6Ik9QRVJBVElPTiN4Iiwic2siOiJPUEVSQVRJT04ifQ"})
	ve, ok := errors.AsType[*club.ValidationError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "cursor", ve.Field)
}
