package asl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sfn/asl"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := asl.DecodeJSON([]byte(s))
	require.NoError(t, err)
	return v
}

func TestPathGet(t *testing.T) {
	t.Parallel()
	doc := decode(t, `{"a":{"b":[1,2,3,4,5]},"list":[{"k":"x","n":1},{"k":"y","n":2}],"dot.name":true}`)
	for _, tc := range []struct {
		path  string
		want  string
		found bool
	}{
		{"$", `{"a":{"b":[1,2,3,4,5]},"list":[{"k":"x","n":1},{"k":"y","n":2}],"dot.name":true}`, true},
		{"$.a.b[0]", `1`, true},
		{"$.a.b[-2]", `4`, true},
		{"$.a.b[9]", ``, false},
		{"$.a.missing", ``, false},
		{"$.a.b.c", ``, false},
		{"$['dot.name']", `true`, true},
		{"$.a['b'][1]", `2`, true},
		{"$.a.b[1:3]", `[2,3]`, true},
		{"$.a.b[::2]", `[1,3,5]`, true},
		{"$.a.b[-2:]", `[4,5]`, true},
		{"$.a.b[::-1]", `[5,4,3,2,1]`, true},
		{"$.a.b[0,4]", `[1,5]`, true},
		{"$.list[*].k", `["x","y"]`, true},
		{"$.list[?(@.n > 1)].k", `["y"]`, true},
		{"$.list[?(@.k == 'x' || @.n == 2)].n", `[1,2]`, true},
		{"$.list[?(@.missing)]", `[]`, true},
		{"$..k", `["x","y"]`, true},
		{"$.nothing[*]", `[]`, true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			p, err := asl.ParsePath(tc.path)
			require.NoError(t, err)
			got, ok := p.Get(doc)
			require.Equal(t, tc.found, ok)
			if tc.found {
				require.JSONEq(t, tc.want, asl.EncodeJSON(got))
			}
		})
	}
}

func TestPathParseErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "a.b", "$.", "$[", "$[abc]", "$.a[1:2:0]", "$[?(x == 1)]", "$..", "$['a'"} {
		_, err := asl.ParsePath(bad)
		require.Error(t, err, bad)
	}
}

func TestPathSetCopiesOnWrite(t *testing.T) {
	t.Parallel()
	in := decode(t, `{"a":{"b":1,"keep":[1]},"other":{"x":1}}`)
	before := asl.EncodeJSON(in)
	out, err := asl.MustParsePath("$.a.b").Set(in, "new")
	require.NoError(t, err)
	require.JSONEq(t, `{"a":{"b":"new","keep":[1]},"other":{"x":1}}`, asl.EncodeJSON(out))
	require.Equal(t, before, asl.EncodeJSON(in), "the input is not modified")

	_, err = asl.MustParsePath("$[*]").Set(in, 1)
	require.Error(t, err, "only reference paths can be written")
	_, err = asl.MustParsePath("$.a.keep[3]").Set(in, 1)
	require.Error(t, err)
}

func TestErrorMatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		equals []string
		name   string
		want   bool
	}{
		{[]string{"States.ALL"}, "Custom", true},
		{[]string{"States.ALL"}, "States.Timeout", true},
		{[]string{"States.ALL"}, "States.Runtime", false},
		{[]string{"States.ALL"}, "States.DataLimitExceeded", false},
		{[]string{"States.TaskFailed"}, "Lambda.Unknown", true},
		{[]string{"States.TaskFailed"}, "States.Timeout", false},
		{[]string{"States.TaskFailed"}, "States.HeartbeatTimeout", false},
		{[]string{"States.Timeout"}, "States.HeartbeatTimeout", true},
		{[]string{"States.HeartbeatTimeout"}, "States.Timeout", false},
		{[]string{"A", "B"}, "B", true},
		{[]string{"A"}, "a", false},
		{[]string{"States.Runtime"}, "States.Runtime", false},
		{[]string{"States.DataLimitExceeded"}, "States.DataLimitExceeded", true},
	} {
		require.Equal(t, tc.want, asl.Matches(tc.equals, tc.name), "%v matches %s", tc.equals, tc.name)
	}
}

func TestRetrierDelay(t *testing.T) {
	t.Parallel()
	r := &asl.Retrier{IntervalSeconds: 3, BackoffRate: 1.5, MaxAttempts: 3}
	require.Equal(t, 3*time.Second, r.Delay(0))
	require.Equal(t, 4500*time.Millisecond, r.Delay(1))
	capped := &asl.Retrier{IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 5}
	require.Equal(t, 4*time.Second, capped.Delay(2))
	require.Equal(t, 5*time.Second, capped.Delay(3))
	require.Equal(t, 5*time.Second, capped.Delay(1000), "no overflow past the cap")
}

func TestNondeterministicIntrinsics(t *testing.T) {
	t.Parallel()
	s := &asl.Scope{Input: decode(t, `{"start":1,"end":999}`)}
	call, err := asl.ParseIntrinsic("States.UUID()")
	require.NoError(t, err)
	a, err := call.Eval(s)
	require.NoError(t, err)
	b, err := call.Eval(s)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, a)
	require.NotEqual(t, a, b)

	call, err = asl.ParseIntrinsic("States.MathRandom($.start, $.end)")
	require.NoError(t, err)
	for range 100 {
		v, err := call.Eval(s)
		require.NoError(t, err)
		n, ok := asl.ToInt(v)
		require.True(t, ok)
		require.GreaterOrEqual(t, n, int64(1))
		require.Less(t, n, int64(999))
	}
	seeded, err := asl.ParseIntrinsic("States.MathRandom(1, 1000, 7)")
	require.NoError(t, err)
	x, _ := seeded.Eval(s)
	y, _ := seeded.Eval(s)
	require.Equal(t, x, y, "a seed makes the result repeatable")
}

func TestDefinitionErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := asl.Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Arguments":{},"Next":"B"},"B":{"Type":"Pass","Assign":{},"End":true},"C":{"Type":"Succeed"}}}`))
	var de *asl.DefinitionError
	require.ErrorAs(t, err, &de)
	locations := map[string]bool{}
	for _, d := range de.Diagnostics {
		locations[d.Location] = true
	}
	require.Equal(t, map[string]bool{"/States/A/Arguments": true, "/States/B/Assign": true, "/States/C": true}, locations)
}
