package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// audited reports whether the audit log has a line for action by whom and
// why.
func (c *consoleProcess) audited(action, by, reason string) bool {
	for _, line := range strings.Split(c.audit(), "\n") {
		var a struct{ Action, By, Reason string }
		if json.Unmarshal([]byte(line), &a) == nil && a.Action == action && a.By == by && a.Reason == reason {
			return true
		}
	}
	return false
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
	// Setting the hash it has already changes nothing: route again then.
	tb.run(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById("main").dataset.loaded = "";
		if (location.hash === %[1]q) { consoleRoute(); } else { location.hash = %[1]q; }`, route)))
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
	eventually(t, 30*time.Second, "on the roster", func() bool { return len(rosterStudents(t, teacher, classID)) == 1 })

	c := startConsole(t)
	tb := c.open(t, "#/", "overview")
	require.Contains(t, tb.text("#mode"), "read-only")
	require.Contains(t, tb.text(`#classes tr[data-class="urgent"]`), "NotificationsQueue", "the urgent class and its queue")
	require.Contains(t, tb.text(`#classes tr[data-class="consumer"]`), "AnalyticsQueue, RosterQueue")
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
	tb.screenshot("console-capacity")

	// Find by id: the class, then the enrollment.
	tb.goTo("#/find/"+classID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="class"]`), "CLASS#"+classID)
	tb.goTo("#/find/"+enrollmentID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="enrollment"]`), "ENROLLMENT#"+enrollmentID)
	require.Contains(t, tb.text(`#find-results tr.place[data-where="outbox"][data-kind="enrollment.created"]`), "published")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="roster_entry"]`), "ROSTER#"+enrollmentID, "the roster's record of it")
	require.Positive(t, tb.count(`#find-results tr.place[data-where="inbox"]`), "a consumer's inbox record of its event")
	tb.screenshot("console-find")

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

// TestConsoleActions: with --allow-actions, an action without the session
// token (or with another) is refused; a redrive from the page moves dead
// letters back with progress, a rate cap and cancel, each moved letter
// reaching its queue once and the rest left untouched; a resolve from the
// page changes the purchase and records who and why in its history, as the
// CLI does; a resolve the provider's answer contradicts is refused.
func TestConsoleActions(t *testing.T) {
	// Traffic, a purchase handed to a person, and dead letters.
	classID, teacher := newClass(t, 10)
	for range 3 {
		r := enroll(t, newUser(t, "student"), classID, id("key"))
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	}
	eventually(t, 30*time.Second, "counted", func() bool { return enrollmentsTotal(t, teacher, classID) == 3 })
	intensiveID := newIntensive(t, 2, 300)
	purchaseID, _ := startPurchase(t, newUser(t, "student"), intensiveID)
	handOver(t, purchaseID)
	emptyDLQ(t, "NotificationsDLQ")
	const letters = 12
	sent := deadLetters(t, "NotificationsDLQ", letters)

	c := startConsole(t, "--allow-actions")
	tb := c.open(t, "#/", "overview")
	require.Contains(t, tb.text("#mode"), "actions allowed")
	require.Contains(t, tb.text(`#work-classes tr[data-queue="NotificationsQueue"]`), fmt.Sprintf("NotificationsDLQ (%d)", letters))
	if screenshots() {
		// A chart needs points (the console samples every second), and
		// traffic while it samples: a student enrolls between samples.
		busy, _ := newClass(t, 100)
		samples := 0
		eventually(t, time.Minute, "twenty samples for the charts", func() bool {
			n := value(tb, chromedp.Evaluate[int](`consoleAPI.get("/api/history").then(h => h.points.length)`, chromedp.EvalAwaitPromise))
			for ; samples < n; samples++ {
				r := enroll(t, newUser(t, "student"), busy, id("key"))
				require.Equal(t, http.StatusCreated, r.status, string(r.raw))
			}
			return n >= 20
		})
		tb.goTo("#/", "overview")
		tb.screenshot("console")
	}

	// Without the session's token, or with another, nothing is done.
	tb.expect(`status of 403 \(Forbidden\)`)
	for _, token := range []string{"", "0123456789abcdef"} {
		for _, a := range consoleActions {
			status, code := tb.postFromPage(a.path, a.body, &token)
			require.Equal(t, http.StatusForbidden, status, a.path)
			require.Equal(t, "token_invalid", code, a.path)
		}
	}
	require.Equal(t, letters, queueDepth(t, "NotificationsDLQ"))
	require.Equal(t, "needs_reconciliation", storedPurchaseOf(t, purchaseID).Status)

	// The DLQ's letters, masked, and a redrive at 2/s, cancelled once it
	// has moved a few.
	tb.goTo("#/dlq/notifications", "dlq")
	require.Equal(t, letters, tb.count(`#letters tr[data-message-id]`))
	require.Contains(t, tb.text(`#letters tbody tr`), "retries_exhausted")
	tb.screenshot("console-dlq")
	// A dead letter by its message id: in the DLQ, with its reason.
	messageID := value(tb, chromedp.AttributeValue(chromedp.CSS(`#letters tr[data-message-id]`), "data-message-id")).Value
	require.NotEmpty(t, messageID)
	tb.goTo("#/find/"+messageID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="dlq"][data-kind="NotificationsDLQ"]`), "retries_exhausted")
	tb.goTo("#/dlq/notifications", "dlq")
	tb.run(
		chromedp.SetValue(chromedp.CSS(`#redrive-form input[name="max"]`), "0"),
		chromedp.SetValue(chromedp.CSS(`#redrive-form input[name="rate"]`), "2"),
		chromedp.SendKeys(chromedp.CSS(`#redrive-form input[name="reason"]`), "provider back after outage, ticket 815"),
		chromedp.Click(chromedp.CSS(`#redrive-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#redrive-progress`)),
	)
	eventually(t, time.Minute, "a few moved", func() bool {
		return value(tb, chromedp.Evaluate[int](`Number((document.getElementById("redrive-progress") || {}).value || 0)`)) >= 2
	})
	tb.screenshot("console-redrive")
	tb.run(chromedp.Click(chromedp.CSS(`#redrive-cancel`)), chromedp.WaitVisible(chromedp.CSS(`#redrive-status[data-status="CANCELLED"]`)))
	status := tb.text("#redrive-status")
	m := regexp.MustCompile(`^CANCELLED: (\d+) of 12 moved at most 2/s`).FindStringSubmatch(status)
	require.NotNil(t, m, status)
	var moved int
	_, _ = fmt.Sscan(m[1], &moved)
	require.Less(t, moved, letters, "cancelled in the middle")
	require.True(t, c.audited("redrive start", "ops-console", "provider back after outage, ticket 815"), c.audit())
	require.True(t, c.audited("redrive cancel", "ops-console", "provider back after outage, ticket 815"), c.audit())

	// Each moved letter reached the notifier once (which dead-letters it
	// again: its enrollment does not exist); the others were not touched.
	eventually(t, 2*time.Minute, "every moved letter handled and back in the DLQ", func() bool {
		return queueDepth(t, "NotificationsQueue") == 0 && queueDepth(t, "NotificationsDLQ") >= letters
	})
	untouched, movedBodies := 0, map[string]map[string]bool{}
	for _, l := range drainDLQ(t, "NotificationsDLQ") {
		require.True(t, sent[l.body], "only what was sent")
		switch l.code {
		case "retries_exhausted":
			untouched++
		case "enrollment_not_found":
			if movedBodies[l.body] == nil {
				movedBodies[l.body] = map[string]bool{}
			}
			movedBodies[l.body][l.original] = true
		default:
			t.Fatalf("unexpected dead letter %+v", l)
		}
	}
	require.Len(t, movedBodies, moved, "each moved letter came back from the notifier")
	for body, originals := range movedBodies {
		require.Len(t, originals, 1, "reached its queue once: %s", body)
	}
	require.Equal(t, letters-moved, untouched, "the rest untouched")

	// A bounded redrive: at most one of three. SQS delivers at least once
	// and the SDK sends again what lost its answer: a letter both moved and
	// left in the DLQ is allowed only as often as the adversary did either
	// (never with it off).
	deadLetters(t, "NotificationsDLQ", 3)
	stats, _ := localStats(t)
	againBefore := stats.Adversary.Counts["sqs.redeliver"] + stats.Adversary.Counts["any.lost_answer"]
	tb.goTo("#/dlq/notifications", "dlq")
	tb.run(
		chromedp.SetValue(chromedp.CSS(`#redrive-form input[name="max"]`), "1"),
		chromedp.SetValue(chromedp.CSS(`#redrive-form input[name="rate"]`), "0"),
		chromedp.SendKeys(chromedp.CSS(`#redrive-form input[name="reason"]`), "one first, ticket 815"),
		chromedp.Click(chromedp.CSS(`#redrive-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#redrive-status[data-status="COMPLETED"]`)),
	)
	require.Equal(t, "COMPLETED: 1 of 1 moved", tb.text("#redrive-status"))
	eventually(t, 2*time.Minute, "the one back from the notifier", func() bool {
		return queueDepth(t, "NotificationsQueue") == 0 && queueDepth(t, "NotificationsDLQ") >= 3
	})
	codes, total := map[string]int{}, 0
	for _, l := range drainDLQ(t, "NotificationsDLQ") {
		codes[l.code]++
		total++
	}
	stats, _ = localStats(t)
	again := int(stats.Adversary.Counts["sqs.redeliver"] + stats.Adversary.Counts["any.lost_answer"] - againBefore)
	require.GreaterOrEqual(t, codes["retries_exhausted"], 2, "one moved, two untouched: %v", codes)
	require.GreaterOrEqual(t, codes["enrollment_not_found"], 1, "one moved, two untouched: %v", codes)
	require.Len(t, codes, 2, "one moved, two untouched: %v", codes)
	require.LessOrEqual(t, total-3, again, "none doubled but by AWS delivering or sending again: %v", codes)

	// The purchase by id: its item and its saga execution.
	tb.goTo("#/find/"+purchaseID, "find")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="club table"][data-kind="purchase"]`), "needs_reconciliation")
	require.Contains(t, tb.text(`#find-results tr.place[data-where="saga"]`), purchaseID)

	// The purchase: listed, then resolved from its page.
	tb.goTo("#/purchases", "purchases")
	require.Contains(t, tb.text(fmt.Sprintf(`#purchase-list tr[data-purchase=%q]`, purchaseID)), "needs_reconciliation")
	tb.goTo("#/purchases/"+purchaseID, "purchases")
	require.Contains(t, tb.text("#purchase-facts"), "pay-"+purchaseID, "the payment's idempotency key")
	tb.screenshot("console-purchase")
	// Confirm without a recorded payment: refused, nothing changes.
	tb.expect(`status of 409 \(Conflict\)`)
	tb.run(
		chromedp.SetValue(chromedp.CSS(`#resolve-form select[name="action"]`), "confirm"),
		chromedp.SendKeys(chromedp.CSS(`#resolve-form textarea[name="reason"]`), "seen in the dashboard"),
		chromedp.Click(chromedp.CSS(`#resolve-form button[type="submit"]`)),
	)
	require.Contains(t, tb.text(`#resolve .error[data-code="refused"]`), "pending")
	require.Equal(t, "needs_reconciliation", storedPurchaseOf(t, purchaseID).Status)
	// Release: no money moved.
	tb.run(
		chromedp.SetValue(chromedp.CSS(`#resolve-form select[name="action"]`), "release"),
		chromedp.SetValue(chromedp.CSS(`#resolve-form textarea[name="reason"]`), "no payment at the provider, ticket 816"),
		chromedp.Click(chromedp.CSS(`#resolve-form button[type="submit"]`)),
	)
	require.Contains(t, tb.text("#resolve-result"), "Purchase is expired (release by ops-console)")
	require.Equal(t, "expired", tb.text("#purchase-status"))
	p := storedPurchaseOf(t, purchaseID)
	require.Equal(t, "expired", p.Status)
	last := p.History[len(p.History)-1]
	require.Equal(t, "ops-console", last.By)
	require.Equal(t, "no payment at the provider, ticket 816", last.Reason)
	require.Contains(t, tb.text("#history tbody tr:last-child"), "no payment at the provider, ticket 816")
	require.True(t, c.audited("resolve release", "ops-console", "no payment at the provider, ticket 816"), c.audit())
}
