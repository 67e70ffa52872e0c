package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestExpressionNext(t *testing.T) {
	t.Parallel()
	// Calendar facts used below (2026): Jan 1 is a Thursday, Feb has 28
	// days, Mar 15 is a Sunday, Aug 1 is a Saturday, May 31 is a Sunday.
	tests := []struct {
		expr  string
		after string
		want  []string // the next fire times, in order
	}{
		{"rate(1 minute)", "2026-01-01 10:00", []string{"2026-01-01 10:01", "2026-01-01 10:02"}},
		{"rate(5 minutes)", "2026-01-01 10:03", []string{"2026-01-01 10:08", "2026-01-01 10:13"}},
		{"rate(1 hour)", "2026-01-01 23:30", []string{"2026-01-02 00:30"}},
		{"rate(2 days)", "2026-01-01 10:00", []string{"2026-01-03 10:00", "2026-01-05 10:00"}},

		{"cron(0 3 * * ? *)", "2026-01-01 02:59", []string{"2026-01-01 03:00", "2026-01-02 03:00"}},
		{"cron(0 3 * * ? *)", "2026-01-01 03:00", []string{"2026-01-02 03:00"}},
		{"cron(* * * * ? *)", "2026-01-01 10:00", []string{"2026-01-01 10:01", "2026-01-01 10:02"}},
		{"cron(0/15 * * * ? *)", "2026-01-01 10:07", []string{"2026-01-01 10:15", "2026-01-01 10:30", "2026-01-01 10:45", "2026-01-01 11:00"}},
		{"cron(*/20 8-9 * * ? *)", "2026-01-01 09:41", []string{"2026-01-02 08:00", "2026-01-02 08:20"}},
		{"cron(5,35 14 * * ? *)", "2026-01-01 14:05", []string{"2026-01-01 14:35", "2026-01-02 14:05"}},
		{"cron(10-50/20 12 * * ? *)", "2026-01-01 00:00", []string{"2026-01-01 12:10", "2026-01-01 12:30", "2026-01-01 12:50", "2026-01-02 12:10"}},
		{"cron(0 18 ? * MON-FRI *)", "2026-01-02 18:00", []string{"2026-01-05 18:00", "2026-01-06 18:00"}},
		{"cron(0 8 ? * 1,7 *)", "2026-01-01 00:00", []string{"2026-01-03 08:00", "2026-01-04 08:00", "2026-01-10 08:00"}},
		{"cron(0 8 ? * sun *)", "2026-01-01 00:00", []string{"2026-01-04 08:00"}},
		{"cron(0 0 1 * ? *)", "2026-01-15 00:00", []string{"2026-02-01 00:00", "2026-03-01 00:00"}},
		{"cron(0 0 1 JAN,JUL ? *)", "2026-02-01 00:00", []string{"2026-07-01 00:00", "2027-01-01 00:00"}},
		{"cron(30 4 1 1 ? 2027)", "2026-03-01 00:00", []string{"2027-01-01 04:30", ""}},
		{"cron(0 0 31 * ? *)", "2026-01-31 00:00", []string{"2026-03-31 00:00", "2026-05-31 00:00"}},
		{"cron(0 0 29 2 ? *)", "2026-03-01 00:00", []string{"2028-02-29 00:00", "2032-02-29 00:00"}},
		{"cron(0 0 1 1 ? 2020)", "2026-01-01 00:00", []string{""}},
		{"cron(0 0 1 1 ? 2190-2199)", "2026-01-01 00:00", []string{"2190-01-01 00:00"}},

		// L, W and #.
		{"cron(0 10 L * ? *)", "2026-01-31 10:00", []string{"2026-02-28 10:00", "2026-03-31 10:00"}},
		{"cron(0 10 L 2 ? 2028)", "2028-01-01 00:00", []string{"2028-02-29 10:00"}},
		{"cron(0 9 15W * ? *)", "2026-03-01 00:00", []string{"2026-03-16 09:00"}}, // Sunday 15 → Monday 16
		{"cron(0 9 1W * ? *)", "2026-07-31 00:00", []string{"2026-08-03 09:00"}},  // Saturday 1 → Monday 3
		{"cron(0 9 31W * ? *)", "2026-05-01 00:00", []string{"2026-05-29 09:00"}}, // Sunday 31 → Friday 29
		{"cron(0 9 LW * ? *)", "2026-01-01 00:00", []string{"2026-01-30 09:00", "2026-02-27 09:00"}},
		{"cron(0 9 ? * 6#3 *)", "2026-01-01 00:00", []string{"2026-01-16 09:00", "2026-02-20 09:00"}},
		{"cron(0 9 ? * MON#1 *)", "2026-01-01 00:00", []string{"2026-01-05 09:00", "2026-02-02 09:00"}},
		{"cron(0 9 ? * 2L *)", "2026-01-01 00:00", []string{"2026-01-26 09:00", "2026-02-23 09:00"}},
		{"cron(0 9 ? * L *)", "2026-01-01 00:00", []string{"2026-01-03 09:00", "2026-01-10 09:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" after "+tt.after, func(t *testing.T) {
			t.Parallel()
			expr, err := ParseExpression(tt.expr)
			require.NoError(t, err)
			require.Equal(t, tt.expr, expr.String())
			at := utc(tt.after)
			for i, w := range tt.want {
				next := expr.Next(at)
				if w == "" {
					require.True(t, next.IsZero(), "fire %d: want none, got %s", i+1, next)
					break
				}
				require.Equal(t, utc(w), next, "fire %d", i+1)
				at = next
			}
		})
	}
}

func TestExpressionNextIsUTC(t *testing.T) {
	t.Parallel()
	expr, err := ParseExpression("cron(0 3 * * ? *)")
	require.NoError(t, err)
	paris := time.FixedZone("CET", 3600)
	// 03:30 in Paris is 02:30 UTC: the next fire is 03:00 UTC the same day.
	next := expr.Next(time.Date(2026, 1, 1, 3, 30, 0, 0, paris))
	require.Equal(t, utc("2026-01-01 03:00"), next)
}

func TestParseExpressionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, wantErr string
	}{
		{"", "want rate(...) or cron(...)"},
		{"every 5 minutes", "want rate(...) or cron(...)"},
		{"at(2026-01-01T00:00:00)", "at() schedules are not supported"},
		{"rate(5)", "want rate(value unit)"},
		{"rate(0 minutes)", "positive integer"},
		{"rate(-1 minutes)", "positive integer"},
		{"rate(five minutes)", "positive integer"},
		{"rate(1 minutes)", `the unit is "minute"`},
		{"rate(5 minute)", `the unit is "minutes"`},
		{"rate(2 weeks)", "unit must be"},
		{"cron(0 3 * * ?)", "6 fields"},
		{"cron(0 3 * * ? * *)", "6 fields"},
		{"cron(0 3 * * * *)", "must be ?"},
		{"cron(0 3 ? * ? *)", "only one of"},
		{"cron(60 3 * * ? *)", "minutes"},
		{"cron(0 24 * * ? *)", "hours"},
		{"cron(0 3 32 * ? *)", "day-of-month"},
		{"cron(0 3 0 * ? *)", "day-of-month"},
		{"cron(0 3 * 13 ? *)", "month"},
		{"cron(0 3 * FOO ? *)", "month"},
		{"cron(0 3 ? * 8 *)", "day-of-week"},
		{"cron(0 3 ? * MON#6 *)", "occurrence"},
		{"cron(0 3 ? * 9L *)", "day-of-week"},
		{"cron(0 3 * * ? 1969)", "year"},
		{"cron(0 3 * * ? 2200)", "year"},
		{"cron(0 3 L-2 * ? *)", "offsets from the last day are not supported"},
		{"cron(0 3 32W * ? *)", "day-of-month"},
		{"cron(30-10 3 * * ? *)", "runs backwards"},
		{"cron(0/0 3 * * ? *)", "step"},
		{"cron(? 3 * * ? *)", "? is only allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExpression(tt.expr)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
