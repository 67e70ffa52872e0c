package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Expression is a parsed schedule expression.
type Expression interface {
	// Next returns the first fire time strictly after t, or the zero time
	// when there is none (a cron expression whose years have passed).
	Next(t time.Time) time.Time
	// String returns the expression as written.
	String() string
}

// ParseExpression parses an EventBridge schedule expression:
//
//	rate(1 minute), rate(5 minutes), rate(1 hour), rate(2 days)
//	cron(minutes hours day-of-month month day-of-week year)
//
// Cron fields accept numbers, names (JAN-DEC, SUN-SAT), and the wildcards
// * , - / and ?; day-of-month also L, LW and nW; day-of-week also L, nL and
// n#k. Exactly one of day-of-month and day-of-week must be ?. Cron times are
// UTC, as for EventBridge rules. One-time at(...) schedules are not
// supported.
func ParseExpression(s string) (Expression, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "rate(") && strings.HasSuffix(s, ")"):
		return parseRate(s)
	case strings.HasPrefix(s, "cron(") && strings.HasSuffix(s, ")"):
		return parseCron(s)
	case strings.HasPrefix(s, "at("):
		return nil, fmt.Errorf("schedule expression %q: one-time at() schedules are not supported", s)
	default:
		return nil, fmt.Errorf("schedule expression %q: want rate(...) or cron(...)", s)
	}
}

// rate fires every interval. Next is relative to the previous fire, so the
// first fire is one interval after the schedule starts, as on EventBridge.
type rate struct {
	expr  string
	every time.Duration
}

func (r rate) Next(t time.Time) time.Time { return t.Add(r.every) }
func (r rate) String() string             { return r.expr }

func parseRate(s string) (Expression, error) {
	body := strings.TrimSuffix(strings.TrimPrefix(s, "rate("), ")")
	fields := strings.Fields(body)
	if len(fields) != 2 {
		return nil, fmt.Errorf("schedule expression %q: want rate(value unit)", s)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("schedule expression %q: the value must be a positive integer", s)
	}
	units := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}
	unit := fields[1]
	// EventBridge insists on the singular for 1 and the plural otherwise.
	singular := strings.TrimSuffix(unit, "s")
	d, ok := units[singular]
	if !ok {
		return nil, fmt.Errorf("schedule expression %q: unit must be minute(s), hour(s) or day(s)", s)
	}
	if (n == 1) != (unit == singular) {
		want := singular
		if n != 1 {
			want += "s"
		}
		return nil, fmt.Errorf("schedule expression %q: with value %d the unit is %q", s, n, want)
	}
	return rate{expr: s, every: time.Duration(n) * d}, nil
}

// Field ranges of EventBridge cron expressions.
const (
	minYear = 1970
	maxYear = 2199
)

var (
	monthNames   = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	weekdayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
)

// cron is a parsed six-field cron expression. Day-of-week values are 1
// (Sunday) to 7 (Saturday), as in EventBridge.
type cron struct {
	expr    string
	minutes set
	hours   set
	months  set
	years   set
	dom     *dayOfMonth // nil when ?
	dow     *dayOfWeek  // nil when ?
}

type dayOfMonth struct {
	days           set
	last           bool  // L
	lastWeekday    bool  // LW
	nearestWeekday []int // nW
}

type dayOfWeek struct {
	days set
	last []int    // nL: the last weekday n of the month
	nth  [][2]int // n#k: the k-th weekday n of the month
}

// set is a set of small non-negative integers.
type set map[int]bool

func parseCron(s string) (Expression, error) {
	body := strings.TrimSuffix(strings.TrimPrefix(s, "cron("), ")")
	f := strings.Fields(body)
	if len(f) != 6 {
		return nil, fmt.Errorf("schedule expression %q: cron needs 6 fields (minutes hours day-of-month month day-of-week year), got %d", s, len(f))
	}
	c := &cron{expr: s}
	var errs []error
	field := func(name, text string, lo, hi int, names map[string]int) set {
		v, err := parseSet(text, lo, hi, names)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", name, text, err))
		}
		return v
	}
	c.minutes = field("minutes", f[0], 0, 59, nil)
	c.hours = field("hours", f[1], 0, 23, nil)
	c.months = field("month", f[3], 1, 12, monthNames)
	c.years = field("year", f[5], minYear, maxYear, nil)

	switch {
	case f[2] == "?" && f[4] == "?":
		errs = append(errs, errors.New("only one of day-of-month and day-of-week may be ?"))
	case f[2] != "?" && f[4] != "?":
		errs = append(errs, errors.New("one of day-of-month and day-of-week must be ?"))
	case f[2] != "?":
		dom, err := parseDayOfMonth(f[2])
		if err != nil {
			errs = append(errs, fmt.Errorf("day-of-month %q: %w", f[2], err))
		}
		c.dom = dom
	default:
		dow, err := parseDayOfWeek(f[4])
		if err != nil {
			errs = append(errs, fmt.Errorf("day-of-week %q: %w", f[4], err))
		}
		c.dow = dow
	}
	if f[0] == "?" || f[1] == "?" || f[3] == "?" || f[5] == "?" {
		errs = append(errs, errors.New("? is only allowed in day-of-month or day-of-week"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("schedule expression %q: %w", s, err)
	}
	return c, nil
}

func parseDayOfMonth(text string) (*dayOfMonth, error) {
	d := &dayOfMonth{days: set{}}
	for item := range strings.SplitSeq(text, ",") {
		switch {
		case item == "L":
			d.last = true
		case item == "LW":
			d.lastWeekday = true
		case strings.HasSuffix(item, "W"):
			n, err := number(strings.TrimSuffix(item, "W"), 1, 31, nil)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", item, err)
			}
			d.nearestWeekday = append(d.nearestWeekday, n)
		case strings.HasPrefix(item, "L"):
			return nil, fmt.Errorf("%q: offsets from the last day are not supported", item)
		default:
			v, err := parseSet(item, 1, 31, nil)
			if err != nil {
				return nil, err
			}
			for k := range v {
				d.days[k] = true
			}
		}
	}
	return d, nil
}

func parseDayOfWeek(text string) (*dayOfWeek, error) {
	d := &dayOfWeek{days: set{}}
	for item := range strings.SplitSeq(text, ",") {
		switch {
		case item == "L":
			// L alone is the last day of the week: Saturday.
			d.days[7] = true
		case strings.HasSuffix(item, "L"):
			n, err := number(strings.TrimSuffix(item, "L"), 1, 7, weekdayNames)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", item, err)
			}
			d.last = append(d.last, n)
		case strings.Contains(item, "#"):
			day, k, _ := strings.Cut(item, "#")
			n, err := number(day, 1, 7, weekdayNames)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", item, err)
			}
			nth, err := number(k, 1, 5, nil)
			if err != nil {
				return nil, fmt.Errorf("%q: occurrence: %w", item, err)
			}
			d.nth = append(d.nth, [2]int{n, nth})
		default:
			v, err := parseSet(item, 1, 7, weekdayNames)
			if err != nil {
				return nil, err
			}
			for k := range v {
				d.days[k] = true
			}
		}
	}
	return d, nil
}

// parseSet parses a comma-separated list of *, n, a-b, */s, n/s and a-b/s.
func parseSet(text string, lo, hi int, names map[string]int) (set, error) {
	out := set{}
	for item := range strings.SplitSeq(text, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			var err error
			if step, err = number(stepText, 1, hi-lo+1, nil); err != nil {
				return nil, fmt.Errorf("step %q: %w", stepText, err)
			}
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = number(a, lo, hi, names); err != nil {
				return nil, err
			}
			if to, err = number(b, lo, hi, names); err != nil {
				return nil, err
			}
			if from > to {
				return nil, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			n, err := number(rng, lo, hi, names)
			if err != nil {
				return nil, err
			}
			from = n
			if !hasStep {
				to = n // a single value; n/s means from n to the end
			}
		}
		for v := from; v <= to; v += step {
			out[v] = true
		}
	}
	return out, nil
}

// number parses a value of a field: a decimal in lo..hi or a name.
func number(text string, lo, hi int, names map[string]int) (int, error) {
	if n, ok := names[strings.ToUpper(text)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a supported value", text)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside %d-%d", n, lo, hi)
	}
	return n, nil
}

func (c *cron) String() string { return c.expr }

// Next walks forward day by day (skipping months and years that cannot
// match) and returns the first matching minute after t, in UTC.
func (c *cron) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	first := true // on the first day only minutes from t onwards count
	for day.Year() <= maxYear {
		switch {
		case !c.years[day.Year()]:
			day = time.Date(day.Year()+1, time.January, 1, 0, 0, 0, 0, time.UTC)
			first = false
			continue
		case !c.months[int(day.Month())]:
			day = time.Date(day.Year(), day.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			first = false
			continue
		}
		if c.dayMatches(day) {
			startHour, startMinute := 0, 0
			if first {
				startHour, startMinute = t.Hour(), t.Minute()
			}
			for h := startHour; h < 24; h++ {
				if !c.hours[h] {
					continue
				}
				m0 := 0
				if h == startHour {
					m0 = startMinute
				}
				for m := m0; m < 60; m++ {
					if c.minutes[m] {
						return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
		first = false
	}
	return time.Time{}
}

func (c *cron) dayMatches(day time.Time) bool {
	last := daysIn(day)
	if c.dom != nil {
		d := c.dom
		if d.days[day.Day()] || (d.last && day.Day() == last) {
			return true
		}
		if d.lastWeekday && day.Day() == nearestWeekday(day, last) {
			return true
		}
		for _, n := range d.nearestWeekday {
			if n <= last && day.Day() == nearestWeekday(day, n) {
				return true
			}
		}
		return false
	}
	d := c.dow
	weekday := int(day.Weekday()) + 1 // 1 = Sunday
	if d.days[weekday] {
		return true
	}
	for _, w := range d.last {
		if w == weekday && day.Day()+7 > last {
			return true
		}
	}
	for _, wk := range d.nth {
		if wk[0] == weekday && (day.Day()-1)/7+1 == wk[1] {
			return true
		}
	}
	return false
}

// nearestWeekday returns the weekday (Monday to Friday) of day's month
// nearest to day-of-month n, never crossing into another month.
func nearestWeekday(day time.Time, n int) int {
	last := daysIn(day)
	d := time.Date(day.Year(), day.Month(), n, 0, 0, 0, 0, time.UTC)
	switch d.Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3 // Monday the 3rd
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2 // Friday
		}
		return n + 1
	}
	return n
}

func daysIn(day time.Time) int {
	return time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
