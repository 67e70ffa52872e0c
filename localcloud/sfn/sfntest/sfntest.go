package sfntest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/api"
	"github.com/clubdev/club/localcloud/sfn/clock"
	"github.com/clubdev/club/localcloud/sfn/integrations"
)

// Epoch is where virtual time starts unless Options.Start says otherwise.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WaitTimeout bounds, in real time, how long Wait and Advance wait.
const WaitTimeout = time.Minute

// Options configure an Env.
type Options struct {
	// Start is the virtual clock's start (default Epoch).
	Start time.Time
	// Manual leaves time still until Advance moves it or AutoAdvance is
	// called. By default time jumps to the next timer whenever every
	// execution is blocked, so a one-hour Wait takes no real time.
	Manual bool
	// Integrations registers the AWS service integrations whose
	// dependency is set (see integrations.Register): Lambda through
	// Integrations.Invoker (a Functions, say), DynamoDB, SQS and SNS
	// through their clients.
	Integrations integrations.Config
}

// Env is a Step Functions executor for one test.
type Env struct {
	// Clock is the executor's virtual clock.
	Clock *clock.Virtual
	// Resources is the executor's task resource registry; Handle adds to it.
	Resources *sfn.Resources
	// Service is the executor itself.
	Service *sfn.Service

	t        testing.TB
	machines atomic.Int64

	mu       sync.Mutex
	stopAuto func()
	srv      *httptest.Server
}

// New starts an executor for t, stopped when t ends.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Start.IsZero() {
		opts.Start = Epoch
	}
	e := &Env{t: t, Clock: clock.NewVirtual(opts.Start), Resources: sfn.NewResources(), stopAuto: func() {}}
	integrations.Register(e.Resources, opts.Integrations)
	e.Service = sfn.New(sfn.Options{Clock: e.Clock, Resources: e.Resources})
	if !opts.Manual {
		e.AutoAdvance()
	}
	t.Cleanup(e.close)
	return e
}

func (e *Env) close() {
	e.mu.Lock()
	stop, srv := e.stopAuto, e.srv
	e.mu.Unlock()
	stop()
	e.Service.Close()
	if srv != nil {
		srv.Close()
	}
}

// AutoAdvance lets time jump to the next timer whenever every execution is
// blocked, until stop is called or the test ends (a no-op while it already
// does).
func (e *Env) AutoAdvance() (stop func()) {
	stop = e.Clock.AutoAdvance()
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.stopAuto
	e.stopAuto = func() { stop(); prev() }
	return stop
}

// Advance waits until every execution is blocked, then moves time by d.
func (e *Env) Advance(d time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := e.Clock.WaitIdle(ctx); err != nil {
		e.t.Fatalf("sfntest: the executions did not become idle: %v", err)
	}
	e.Clock.Advance(d)
}

// Handle registers h for a task resource ARN.
func (e *Env) Handle(resource string, h sfn.TaskHandler) { e.Resources.Handle(resource, h) }

// CreateStateMachine creates a state machine and returns its ARN.
func (e *Env) CreateStateMachine(name, definition string) string {
	e.t.Helper()
	sm, err := e.Service.CreateStateMachine(context.Background(), sfn.CreateStateMachineInput{
		Name: name, Definition: definition, RoleArn: "arn:aws:iam::000000000000:role/sfn",
	})
	if err != nil {
		e.t.Fatalf("sfntest: create state machine %s: %v", name, err)
	}
	return sm.ARN
}

// Start starts an execution of a state machine, named by the service, and
// returns its ARN.
func (e *Env) Start(machine, input string) string {
	e.t.Helper()
	return e.StartNamed(machine, "", input)
}

// StartNamed starts an execution of a given name and returns its ARN.
func (e *Env) StartNamed(machine, name, input string) string {
	e.t.Helper()
	x, err := e.Service.StartExecution(context.Background(), sfn.StartExecutionInput{StateMachineArn: machine, Name: name, Input: input})
	if err != nil {
		e.t.Fatalf("sfntest: start an execution of %s: %v", machine, err)
	}
	return x.ARN
}

// Wait waits, for at most WaitTimeout of real time, for an execution to
// end, and returns it.
func (e *Env) Wait(arn string) sfn.Execution {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	x, err := e.Service.WaitForCompletion(ctx, arn)
	if err != nil {
		e.t.Fatalf("sfntest: execution %s did not finish: %v", arn, err)
	}
	return x
}

// Run creates a state machine of a fresh name from definition, runs it on
// input and returns the ended execution.
func (e *Env) Run(definition, input string) sfn.Execution {
	e.t.Helper()
	machine := e.CreateStateMachine(fmt.Sprintf("machine-%d", e.machines.Add(1)), definition)
	return e.Wait(e.Start(machine, input))
}

// History returns an execution's history.
func (e *Env) History(arn string) []sfn.HistoryEvent {
	e.t.Helper()
	h, err := e.Service.GetExecutionHistory(context.Background(), arn)
	if err != nil {
		e.t.Fatalf("sfntest: history of %s: %v", arn, err)
	}
	return h
}

// EventTypes returns the types of an execution's history events, in order.
func (e *Env) EventTypes(arn string) []string {
	e.t.Helper()
	return Types(e.History(arn))
}

// Types returns the types of history events, in order.
func Types(h []sfn.HistoryEvent) []string {
	out := make([]string, len(h))
	for i, ev := range h {
		out[i] = ev.Type
	}
	return out
}

// ExecutionARN is the ARN of a state machine's execution of a given name.
func ExecutionARN(machine, name string) string {
	return strings.Replace(machine, ":stateMachine:", ":execution:", 1) + ":" + name
}

// URL serves the Step Functions API of the executor over HTTP, from the
// first call until the test ends, and returns its endpoint.
func (e *Env) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		e.srv = httptest.NewServer(api.NewHandler(e.Service))
	}
	return e.srv.URL
}

// Client returns an AWS SDK client of the executor's HTTP API (URL).
func (e *Env) Client() *awssfn.Client {
	return awssfn.New(awssfn.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.URL()),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

var substitution = regexp.MustCompile(`\$\{[A-Za-z0-9_]+\}`)

// Definition reads a definition of the repository's statemachines/ folder
// (file names it there, e.g. "purchase.asl.json") and applies
// substitutions as the template's DefinitionSubstitutions do: "${Name}"
// becomes substitutions["Name"]. A placeholder left without a value fails
// the test.
func Definition(t testing.TB, file string, substitutions map[string]string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("sfntest: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, "statemachines", file))
	if err != nil {
		t.Fatalf("sfntest: %v", err)
	}
	def := substitution.ReplaceAllStringFunc(string(b), func(p string) string {
		if v, ok := substitutions[p[2:len(p)-1]]; ok {
			return v
		}
		return p
	})
	if left := substitution.FindAllString(def, -1); len(left) > 0 {
		t.Fatalf("sfntest: %s: no substitution for %s", file, strings.Join(left, ", "))
	}
	return def
}

// moduleRoot is the folder of the module's go.mod, as the go command
// finds it from the working directory (a test's package folder).
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("the working directory is in no module")
	}
	return filepath.Dir(gomod), nil
}
