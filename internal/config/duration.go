package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// day is the length of the "d" unit. Retention settings are about calendar
// days only loosely (TTL deletes lazily anyway), so 24 hours is the day.
const day = 24 * time.Hour

// ParseDuration parses a Go duration ("90s", "1h30m") that may start with a
// number of days ("7d", "1.5d", "1d12h"). Go's time.ParseDuration has no day
// unit, and the template writes retention periods in days. A sign, if any,
// applies to the whole value ("-1d12h" is -36h), as in time.ParseDuration.
// Whether a negative or zero value makes sense is the caller's decision.
func ParseDuration(s string) (time.Duration, error) {
	in := s
	s = strings.TrimSpace(s)
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	days, rest, err := splitDays(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", in, err)
	}
	var d time.Duration
	if rest != "" {
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("duration %q: %w", in, err)
		}
	} else if days < 0 {
		// Neither days nor anything else: let time.ParseDuration say why.
		if _, err := time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("duration %q: %w", in, err)
		}
	}
	if days > 0 {
		total := days*float64(day) + float64(d)
		if total > math.MaxInt64 {
			return 0, fmt.Errorf("duration %q: out of range", in)
		}
		d = time.Duration(total)
	}
	if neg {
		d = -d
	}
	return d, nil
}

// splitDays splits a leading "<number>d" off s. days is -1 when s does not
// start with one; rest is what follows.
func splitDays(s string) (days float64, rest string, err error) {
	i := 0
	for i < len(s) && isNumberByte(s[i]) {
		i++
	}
	// "7days" is not seven days followed by "ays": leave units that merely
	// start with d to time.ParseDuration, which names them.
	if i == 0 || i == len(s) || s[i] != 'd' || (i+1 < len(s) && !isNumberByte(s[i+1])) {
		return -1, s, nil
	}
	days, err = strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, "", fmt.Errorf("invalid number of days %q", s[:i])
	}
	return days, s[i+1:], nil
}

func isNumberByte(b byte) bool { return b == '.' || ('0' <= b && b <= '9') }
