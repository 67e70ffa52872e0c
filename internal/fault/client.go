package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The environment a faults build reads (see the package documentation).
const (
	EnvURL          = "CLUB_FAULTS_URL"
	envEndpoint     = "AWS_ENDPOINT_URL"
	envFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
)

// askTimeout bounds one question to the control endpoint.
const askTimeout = 5 * time.Second

// client asks the control endpoint what to do at each pass. It is what
// Inject uses in a faults build; it lives outside the tagged file so that
// the ordinary test run covers it (a normal build never references it, and
// the linker drops it).
type client struct {
	hitURL   string // empty: no control endpoint, no faults
	function string
	http     *http.Client
	stderr   io.Writer
	exit     func(code int)
	warn     sync.Once
}

// newClient reads the control endpoint and the function's name through
// getenv.
func newClient(getenv func(string) string, stderr io.Writer, exit func(int)) *client {
	base := getenv(EnvURL)
	if base == "" {
		if ep := getenv(envEndpoint); ep != "" {
			base = strings.TrimSuffix(ep, "/") + "/_club/faults"
		}
	}
	c := &client{function: getenv(envFunctionName), http: &http.Client{Timeout: askTimeout}, stderr: stderr, exit: exit}
	if base != "" {
		c.hitURL = strings.TrimSuffix(base, "/") + "/hit"
	}
	return c
}

// inject reports the pass at p and carries out the decision.
func (c *client) inject(ctx context.Context, p Point, key string) error {
	if c.hitURL == "" {
		return nil
	}
	d, err := c.ask(ctx, Hit{Point: p, Function: c.function, Key: key})
	if err != nil && ctx.Err() != nil {
		// The caller gave up while asking: report that, not a broken endpoint.
		return ctx.Err()
	}
	if err != nil {
		c.warn.Do(func() {
			fmt.Fprintf(c.stderr, "fault: control endpoint unreachable, running without faults: %v\n", err)
		})
		return nil
	}
	switch d.Action {
	case Crash:
		fmt.Fprintf(c.stderr, "fault: crash at %s (key %q, rule %d)\n", p, key, d.Rule)
		c.exit(ExitCode)
		return &Error{Point: p, Key: key} // only when exit returns (tests)
	case Fail:
		return &Error{Point: p, Key: key}
	case Delay:
		t := time.NewTimer(time.Duration(d.DelayMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (c *client) ask(ctx context.Context, h Hit) (Decision, error) {
	body, err := json.Marshal(h)
	if err != nil {
		return Decision{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.hitURL, bytes.NewReader(body))
	if err != nil {
		return Decision{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Decision{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Decision{}, fmt.Errorf("POST %s: %s: %s", c.hitURL, resp.Status, bytes.TrimSpace(msg))
	}
	var d Decision
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return Decision{}, fmt.Errorf("POST %s: %w", c.hitURL, err)
	}
	return d, nil
}
