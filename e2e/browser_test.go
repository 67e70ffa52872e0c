package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// The pages people look at, in a real browser: headless Chromium (Debian's
// chromium package; .ci/run installs it) driven through the DevTools
// protocol. One browser serves the whole suite; each test opens its own
// tab. A missing browser fails the test that needs it: the pages are not
// tested without one.
//
// CLUB_SCREENSHOTS=1 makes the tests write their screenshots into docs/
// (the README links them); without it they take none, so that a test run
// leaves the tree as it was.

// chromiumPath is the browser: $CHROMIUM, else chromium on the PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("no chromium on the PATH (apt-get install chromium, or set CHROMIUM): the browser tests need it: %w", err)
	}
	return p, nil
}

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

// stopBrowser ends the browser, if one was started; runMain calls it.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

func browserContext(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		path, err := chromiumPath()
		if err != nil {
			browser.err = err
			return
		}
		dir, err := os.MkdirTemp("", "club-e2e-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		// Without the background-networking switches the browser calls
		// home at start, which a closed network refuses.
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.UserDataDir(dir),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.WindowSize(1280, 900),
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		browser.ctx = bctx
		browser.cancel = func() { cancelBrowser(); cancelAlloc(); _ = os.RemoveAll(dir) }
		// Start it now, so that a browser that cannot start fails here.
		browser.err = chromedp.Do(bctx)
	})
	require.NoError(t, browser.err, "start headless chromium")
	return browser.ctx
}

// tab is one browser tab on a page of the stack.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu sync.Mutex
	// problems are the console errors, uncaught exceptions, failed
	// requests and requests to other hosts the page made.
	problems []string
	// expected are problems a test provoked on purpose (a refused request).
	expected []*regexp.Regexp
}

// expect tolerates the problems that match pattern: the browser logs every
// error answer, also one the test asked for.
func (tb *tab) expect(pattern string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.expected = append(tb.expected, regexp.MustCompile(pattern))
}

// openTab opens url in a new tab of the suite's browser and fails the test,
// when it ends, if the page logged a console error, threw, failed a request
// or asked anything of a host other than origin's (a page must need no CDN).
func openTab(t *testing.T, url, origin string) *tab {
	t.Helper()
	tb := &tab{t: t}
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithListener(func(ev any) {
		// Runs in the tab's event loop: record, nothing more.
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := e.Request.URL
			if !strings.HasPrefix(u, origin) && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				tb.problem("request to another host: %s", u)
			}
		case *network.EventLoadingFailed:
			if !e.Canceled {
				tb.problem("request failed: %s", e.ErrorText)
			}
		}
	}))
	tb.ctx = ctx
	require.NoError(t, chromedp.Do(ctx), "open a tab")
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				tb.problem("console %s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		var unexpected []string
		for _, p := range tb.problems {
			if !slices.ContainsFunc(tb.expected, func(re *regexp.Regexp) bool { return re.MatchString(p) }) {
				unexpected = append(unexpected, p)
			}
		}
		if len(unexpected) > 0 {
			t.Errorf("%s: the page reported problems:\n  %s", url, strings.Join(unexpected, "\n  "))
		}
	})
	tb.run(chromedp.Navigate(url))
	return tb
}

func (tb *tab) problem(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.problems = append(tb.problems, fmt.Sprintf(format, args...))
}

// run performs actions on the tab, failing the test on error.
func (tb *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience.Wait())
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, actions...))
}

// value runs one action that returns a value.
func value[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience.Wait())
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(tb.t, err)
	return v
}

// text returns the text of the first node sel matches, once it is visible.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	tb.run(chromedp.WaitVisible(chromedp.CSS(sel)))
	return value(tb, chromedp.Text(chromedp.CSS(sel)))
}

// screenshots says whether the tests write their screenshots.
func screenshots() bool { return os.Getenv("CLUB_SCREENSHOTS") != "" }

// screenshot writes the whole page to docs/<name>.png when CLUB_SCREENSHOTS
// is set.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	if !screenshots() {
		return
	}
	png := value(tb, chromedp.FullScreenshot(100))
	path := filepath.Join(moduleRoot(), "docs", name+".png")
	require.NoError(tb.t, os.WriteFile(path, png, 0o644))
	tb.t.Logf("screenshot: %s", path)
}

// nodes counts the nodes sel matches now.
func (tb *tab) count(sel string) int {
	tb.t.Helper()
	return len(value(tb, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0))))
}
