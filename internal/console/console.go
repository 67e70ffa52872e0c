package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Source answers the console's questions about one stack. Each answer is
// the JSON document of the matching clubctl command's --json output, so
// that the page shows what the command prints.
type Source interface {
	// Status is clubctl status: work classes, outbox, streams, purchases,
	// alarms.
	Status(ctx context.Context) (any, error)
	// Gauges is Status without what is costly to read often (counting
	// purchases scans the club table): the charts' samples.
	Gauges(ctx context.Context) (any, error)
	// DeadLetterQueues is clubctl dlq list.
	DeadLetterQueues(ctx context.Context) (any, error)
	// DeadLetters is clubctl dlq show --queue queue --max max --body, with
	// personal data masked.
	DeadLetters(ctx context.Context, queue string, max int) (any, error)
	// Purchases is clubctl reconcile: the purchases a person must look at.
	Purchases(ctx context.Context) (any, error)
	// Purchase is one purchase: its status, history (who and why for a
	// person's decisions) and the provider's recorded answers.
	Purchase(ctx context.Context, id string) (any, error)
	// Find says where an id is now and what happened to it.
	Find(ctx context.Context, id string) (any, error)
	// Capacity is clubctl capacity --simulate for the numbers in q
	// (backlog, arrival, rate, deadline).
	Capacity(ctx context.Context, q url.Values) (any, error)
	// Resolve is clubctl reconcile resolve.
	Resolve(ctx context.Context, r Resolution) (any, error)
	// PastHour is what is known of the hour before the console started, for
	// the charts (nil: nothing).
	PastHour(ctx context.Context) ([]Sample, error)
	// PlanRedrive checks a redrive as clubctl dlq redrive does and returns
	// it ready to run.
	PlanRedrive(ctx context.Context, r RedriveRequest) (RedrivePlan, error)
}

// Resolution is a person's decision on a purchase.
type Resolution struct {
	PurchaseID string `json:"purchase_id"`
	Action     string `json:"action"`
	Reason     string `json:"reason"`
	Force      bool   `json:"force"`
	By         string `json:"by"`
}

// RedriveRequest asks for a bounded redrive of a queue's dead letters.
type RedriveRequest struct {
	Queue string `json:"queue"`
	// Max bounds the messages moved (0: all).
	Max int `json:"max"`
	// Rate caps the messages moved per second (0: no cap).
	Rate   float64 `json:"rate_per_second"`
	Force  bool    `json:"force"`
	Reason string  `json:"reason"`
}

// RedrivePlan is a redrive that passed its checks.
type RedrivePlan struct {
	Queue, DLQ string
	// ToMove is the most it will move: the DLQ's depth, or Max.
	ToMove int
	// Run moves the messages until done or ctx ends, reporting the count
	// moved so far to progress; it returns what it moved. Cancelling ctx
	// finishes the batch in hand and stops.
	Run func(ctx context.Context, progress func(moved int)) (moved int, err error)
}

// Options configure the handler.
type Options struct {
	// AllowActions enables redrives and resolves; without it every action
	// answers 403 read_only.
	AllowActions bool
	// Token is the session's token actions must carry; a random one when
	// empty.
	Token string
	// By names the operator in the history of what they decide.
	By string
	// Hosts are the Host headers the console answers (its listen address,
	// and localhost at the same port); none: any.
	Hosts []string
	// Audit receives one JSON line per action; nil: none.
	Audit io.Writer
	// SampleEvery is how often the charts' status is read; 0: no charts.
	SampleEvery time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

//go:embed assets
var assets embed.FS

// Console is the handler. Close stops its sampling and cancels running
// redrives.
type Console struct {
	src  Source
	opts Options
	mux  *http.ServeMux

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	history *history
	moves   *moves
	auditMu sync.Mutex
}

// New returns the console over src. Call Close when done.
func New(src Source, opts Options) (*Console, error) {
	if opts.Token == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("session token: %w", err)
		}
		opts.Token = hex.EncodeToString(b)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Console{src: src, opts: opts, ctx: ctx, cancel: cancel, history: newHistory(time.Hour), moves: newMoves()}
	c.routes()
	if opts.SampleEvery > 0 {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.sample(ctx) }()
	}
	return c, nil
}

// Token is the session's token.
func (c *Console) Token() string { return c.opts.Token }

// Close stops the sampling and cancels the running redrives, waiting for
// each to finish its batch in hand.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
}

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", c.index)

	m.HandleFunc("GET /api/status", c.read(func(r *http.Request) (any, error) { return c.src.Status(r.Context()) }))
	m.HandleFunc("GET /api/history", c.read(func(*http.Request) (any, error) { return c.history.snapshot(), nil }))
	m.HandleFunc("GET /api/dlqs", c.read(func(r *http.Request) (any, error) { return c.src.DeadLetterQueues(r.Context()) }))
	m.HandleFunc("GET /api/dlqs/{queue}", c.read(func(r *http.Request) (any, error) {
		max, err := intParam(r.URL.Query(), "max", 20)
		if err != nil {
			return nil, err
		}
		return c.src.DeadLetters(r.Context(), r.PathValue("queue"), max)
	}))
	m.HandleFunc("GET /api/purchases", c.read(func(r *http.Request) (any, error) { return c.src.Purchases(r.Context()) }))
	m.HandleFunc("GET /api/purchases/{id}", c.read(func(r *http.Request) (any, error) { return c.src.Purchase(r.Context(), r.PathValue("id")) }))
	m.HandleFunc("GET /api/find/{id}", c.read(func(r *http.Request) (any, error) { return c.src.Find(r.Context(), r.PathValue("id")) }))
	m.HandleFunc("GET /api/capacity", c.read(func(r *http.Request) (any, error) { return c.src.Capacity(r.Context(), r.URL.Query()) }))
	m.HandleFunc("GET /api/redrives", c.read(func(*http.Request) (any, error) { return c.moves.list(), nil }))
	m.HandleFunc("GET /api/redrives/{id}", c.read(func(r *http.Request) (any, error) { return c.moves.get(r.PathValue("id")) }))
	m.HandleFunc("GET /api/session", c.read(func(*http.Request) (any, error) {
		return map[string]any{"actions_allowed": c.opts.AllowActions, "by": c.opts.By}, nil
	}))

	m.HandleFunc("POST /api/purchases/{id}/resolve", c.act(c.resolve))
	m.HandleFunc("POST /api/dlqs/{queue}/redrive", c.act(c.startRedrive))
	m.HandleFunc("POST /api/redrives/{id}/cancel", c.act(c.cancelRedrive))
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Err: fmt.Errorf("no %s %s", r.Method, r.URL.Path)})
	})
	c.mux = m
}

// ServeHTTP refuses a foreign Host, then routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(c.opts.Hosts) > 0 && !slices.Contains(c.opts.Hosts, r.Host) {
		writeError(w, &Error{Status: http.StatusForbidden, Code: CodeHostNotAllowed,
			Err: fmt.Errorf("host %q is not this console's (%s)", r.Host, strings.Join(c.opts.Hosts, ", "))})
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) index(w http.ResponseWriter, _ *http.Request) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		writeError(w, err)
		return
	}
	// The token goes into the page only: another site can send requests
	// here but cannot read this page, so it cannot learn the token.
	out := strings.Replace(string(page), "{{TOKEN}}", html.EscapeString(c.opts.Token), 1)
	out = strings.Replace(out, "{{ACTIONS}}", strconv.FormatBool(c.opts.AllowActions), 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, out)
}

func (c *Console) read(f func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// act guards an action: actions allowed, then the session's token.
func (c *Console) act(f func(*http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.opts.AllowActions {
			writeError(w, &Error{Status: http.StatusForbidden, Code: CodeReadOnly,
				Err: errors.New("the console is read-only: start it with --allow-actions to act")})
			return
		}
		got := r.Header.Get("X-Console-Token")
		if subtle.ConstantTimeCompare([]byte(got), []byte(c.opts.Token)) != 1 {
			writeError(w, &Error{Status: http.StatusForbidden, Code: CodeTokenInvalid,
				Err: errors.New("missing or wrong X-Console-Token: actions come from the console's own page")})
			return
		}
		status, v, err := f(r)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, status, v)
	}
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Invalid(fmt.Errorf("request body: %w", err))
	}
	return nil
}

func intParam(q url.Values, name string, def int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, Invalid(fmt.Errorf("%s=%q: want a positive whole number", name, s))
	}
	return n, nil
}

// audit writes one line for an action.
func (c *Console) audit(action, target, reason string, result any) {
	if c.opts.Audit == nil {
		return
	}
	line, _ := json.Marshal(map[string]any{
		"at": c.opts.Now().UTC(), "by": c.opts.By, "action": action, "target": target, "reason": reason, "result": result,
	})
	c.auditMu.Lock()
	defer c.auditMu.Unlock()
	_, _ = c.opts.Audit.Write(append(line, '\n'))
}

func (c *Console) resolve(r *http.Request) (int, any, error) {
	var res Resolution
	if err := decode(r, &res); err != nil {
		return 0, nil, err
	}
	res.PurchaseID, res.By = r.PathValue("id"), c.opts.By
	if strings.TrimSpace(res.Reason) == "" {
		return 0, nil, Invalid(errors.New("reason is required: the purchase's history keeps why"))
	}
	out, err := c.src.Resolve(r.Context(), res)
	if err != nil {
		c.audit("resolve "+res.Action, res.PurchaseID, res.Reason, map[string]string{"error": err.Error()})
		return 0, nil, err
	}
	c.audit("resolve "+res.Action, res.PurchaseID, res.Reason, out)
	return http.StatusOK, out, nil
}
