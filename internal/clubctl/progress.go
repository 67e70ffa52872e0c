package clubctl

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// newProgress returns a progress bar on w (stderr: stdout carries results
// only) counting up to total, which may be an estimate: Set raises the
// maximum when the count passes it.
func newProgress(w io.Writer, description string, total int) *progress {
	return &progress{w: w, bar: progressbar.NewOptions(max(total, 1),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
	)}
}

type progress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// Set shows n done. Errors writing to the terminal are not worth stopping
// the work for.
func (p *progress) Set(n int) {
	if n > p.bar.GetMax() {
		p.bar.ChangeMax(n)
	}
	_ = p.bar.Set(n)
}

// Done stops the bar where it is (an interrupted run is not shown as
// complete) and ends its line.
func (p *progress) Done() {
	_ = p.bar.Exit()
	fmt.Fprintln(p.w)
}

// parseRate reads a rate in messages per second: "50", "50/s" or "2.5/s".
// 0 means no limit.
func parseRate(flag, s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "/s"), 64)
	if err != nil || v < 0 {
		return 0, usageErrorf("%s %q: want messages per second, like 50/s (0 for no limit)", flag, s)
	}
	return v, nil
}
