package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The console (clubctl console), the built binary on the stack under test,
// driven in the suite's headless Chromium.

// consoleProcess is a running clubctl console.
type consoleProcess struct {
	url string
	mu  sync.Mutex
	// stderr holds the audit lines.
	stderr bytes.Buffer
}

func (c *consoleProcess) audit() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// startConsole runs clubctl console on a free loopback port with args; it
// stops (SIGINT, as Ctrl-C) when the test ends.
func startConsole(t *testing.T, args ...string) *consoleProcess {
	t.Helper()
	cmd := clubctlCommand(t, append([]string{"console", "--listen", "127.0.0.1:0", "--sample-every", "1s", "--by", "ops-console"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c := &consoleProcess{}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "the console says where it listens (stderr: %s)", c.audit())
	m := regexp.MustCompile(`^console: (http://127\.0\.0\.1:\d+/) \((.*)\)$`).FindStringSubmatch(sc.Text())
	require.NotNil(t, m, "first line: %q", sc.Text())
	c.url = m[1]
	go func() {
		for sc.Scan() {
		}
	}()
	return c
}

// open opens a page of the console (a hash route like "#/dlq") and waits
// until it has loaded.
func (c *consoleProcess) open(t *testing.T, route, page string) *tab {
	t.Helper()
	tb := openTab(t, c.url+route, strings.TrimSuffix(c.url, "/"))
	tb.run(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`main[data-loaded=%q]`, page))))
	return tb
}

// goTo follows a hash route in the tab and waits for page to load.
func (tb *tab) goTo(route, page string) {
	tb.t.Helper()
	tb.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById("main").dataset.loaded = ""; location.hash = %q`, route)))
	tb.run(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`main[data-loaded=%q]`, page))))
}

// postFromPage sends an action with the page's own api (and so the token),
// or, with token set, with that token instead; it returns the status and
// the error code of the answer.
func (tb *tab) postFromPage(path, body string, token *string) (int, string) {
	tb.t.Helper()
	header := `"X-Console-Token": document.querySelector('meta[name="console-token"]').content`
	if token != nil {
		header = fmt.Sprintf(`"X-Console-Token": %q`, *token)
		if *token == "" {
			header = ""
		}
	}
	js := fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/json", %s}, body: %q})
		.then(async r => [r.status, ((await r.json()).error || {}).code || ""])`, path, header, body)
	got := value(tb, chromedp.Evaluate[[]any](js, chromedp.EvalAwaitPromise))
	require.Len(tb.t, got, 2)
	return int(got[0].(float64)), got[1].(string)
}

var consoleActions = []struct{ path, body string }{
	{"/api/purchases/p-none/resolve", `{"action":"release","reason":"ticket 1"}`},
	{"/api/dlqs/notifications/redrive", `{"max":1,"rate_per_second":1,"reason":"ticket 2"}`},
	{"/api/redrives/redrive-1/cancel", `{}`},
}

// TestConsoleReadOnly: every page of a read-only console loads with no
// console error; the quickstart's class and enrollment are found by id
// (the entity, its outbox event, the consumers' records); and every action
// is refused, from the console's own page and with its token.
func TestConsoleReadOnly(t *testing.T) {
	// The quickstart: a teacher's class, a student's enrollment.
	classID, teacher := newClass(t, 5)
	student := newUser(t, "student")
	r := enroll(t, student, classID, id("key"))
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	enrollmentID := r.str("enrollment_id")
	eventually(t, 30*time.Second, "counted", func() bool { return enrollmentsTotal(t, teacher, classID) == 1 })

	c := startConsole(t)
	tb := c.open(t, "#/", "overview")
	require.Contains(t, tb.text("#mode"), "read-only")
	require.Contains(t, tb.text(`#work-classes tr[data-queue="NotificationsQueue"]`), "urgent")
	require.Contains(t, tb.text(`#work-classes tr[data-queue="ExportsQueue"]`), "bulk")
	require.Contains(t, tb.text("#outbox"), "unpublished")
	tb.text("#alarms")
	tb.text("#charts")
	for _, p := range []struct{ route, page, sel string }{
		{"#/dlq", "dlq", "#dlq-list"},
		{"#/dlq/notifications", "dlq", "#redrive"},
		{"#/purchases", "purchases", "h1"},
		{"#/alarms", "alarms", "#alarms"},
		{"#/capacity", "capacity", "#capacity-verdict"},
	} {
		tb.goTo(p.route, p.page)
		tb.text(p.sel)
	}
	require.Contains(t, tb.text("#capacity-verdict"), "Drains in 5 m 0 s", "6000 queued, 100/s served, 80/s arriving: 300 s")

	// Find by id: the class, then the enrollment.
	tb.goTo("#/find/"+classID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="class"]`), "CLASS#"+classID)
	tb.goTo("#/find/"+enrollmentID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="enrollment"]`), "ENROLLMENT#"+enrollmentID)
	require.Contains(t, tb.text(`#find-results tr.place[data-where="outbox"][data-kind="enrollment.created"]`), "published")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="roster_entry"]`), "ROSTER#"+enrollmentID, "the roster's record of it")
	require.Positive(t, tb.count(`#find-results tr.place[data-where="inbox"]`), "a consumer's inbox record of its event")

	// Read-only: the page offers no action, and the console refuses every
	// one, token or not.
	tb.goTo("#/dlq/notifications", "dlq")
	tb.text("#read-only-note")
	require.Zero(t, tb.count("#redrive-form"))
	tb.expect(`status of 403 \(Forbidden\)`)
	for _, a := range consoleActions {
		status, code := tb.postFromPage(a.path, a.body, nil)
		require.Equal(t, http.StatusForbidden, status, a.path)
		require.Equal(t, "read_only", code, a.path)
	}
	require.NotContains(t, c.audit(), `"action"`, "nothing was done")
}
