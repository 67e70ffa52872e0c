// Command club-local runs the whole Club backend on this machine: the AWS APIs
// on one endpoint (kumo embedded, plus what the local cloud adds), every
// function of infra/template.yaml as real processes, the event source
// mappings, schedules and the HTTP API with its JWT authorizer. See
// docs/local-cloud.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/clubdev/club/api/reference"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/state"
	"github.com/clubdev/club/localcloud/template"
)

const usage = `club-local runs the Club backend locally: no Docker, no AWS account.

Usage:
  club-local [flags]

It builds every function of the template, serves the AWS APIs on the endpoint
(point the SDK, the AWS CLI and clubctl at it with AWS_ENDPOINT_URL), provisions
every resource, runs the event source mappings and schedules, serves the HTTP
API, writes <state-dir>/stack.json and answers GET <api>/healthz with 200 once
ready. Ctrl-C stops everything; no process is left behind.

Data is kept across restarts in <state-dir>/state (tables, queues with their
messages, topics, buckets, parameters, the DynamoDB streams and where each
mapping has read to, Step Functions executions, the sandboxes); --fresh
starts empty, --persist=false keeps everything in memory, as does --engine
moto. See docs/local-cloud.md.

Examples:
  club-local                                  # what 'make run' does
  club-local --fresh                          # start with empty tables and queues ('make reset')
  club-local --validate                       # check the template and stop
  club-local --engine moto                    # the data plane on moto (needs python3 with moto)
  club-local --endpoint 127.0.0.1:4600 --api 127.0.0.1:3100
  aws --endpoint-url http://127.0.0.1:4566 sqs list-queues

Flags:
`

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }
func (p params) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	p[k] = val
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("club-local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	tmpl := fs.String("template", "infra/template.yaml", "SAM template to run")
	stateDir := fs.String("state-dir", ".club", "directory for build output, logs, the issuer key and stack.json")
	endpoint := fs.String("endpoint", "127.0.0.1:4566", "address of the AWS endpoint")
	api := fs.String("api", "127.0.0.1:3000", "address of the HTTP API")
	mailAddr := fs.String("mail", "127.0.0.1:4580", "address of the mail sandbox")
	paymentAddr := fs.String("payment", "127.0.0.1:4581", "address of the payment sandbox")
	noSandboxes := fs.Bool("no-sandboxes", false, "do not start the mail and payment sandboxes")
	speed := fs.Float64("schedule-speed", 1, "run schedules this many times faster than real time")
	tags := fs.String("tags", "", "comma-separated build tags for the functions")
	quiet := fs.Bool("quiet", false, "do not echo function output (it is always in <state-dir>/logs)")
	engine := fs.String("engine", localcloud.EngineKumo, "the emulator behind the endpoint: "+strings.Join(engine.Names, " or ")+
		" (moto: python3 -m moto.server as a child process, a second opinion on AWS behaviour; slower)")
	validate := fs.Bool("validate", false, "parse and check the template, print a summary and exit")
	persist := fs.Bool("persist", true, "keep the data in <state-dir>/state across restarts")
	fresh := fs.Bool("fresh", false, "empty <state-dir>/state before starting")
	snapshotInterval := fs.Duration("snapshot-interval", time.Second, "how often the emulator's changed tables and queues are written to <state-dir>/state, at least (a kill -9 can lose that much; longer when a snapshot takes more than 5 % of it)")
	adversarySpec := fs.String("adversary", "", "misbehave as AWS is documented to once the stack is up: a profile (aws, heavy) or BEHAVIOUR=RATE,... (docs/local-cloud.md); off by default")
	adversarySeed := fs.Uint64("adversary-seed", 0, "seed of the adversary's decisions (0: a new one, logged at start)")
	overrides := params{}
	fs.Var(overrides, "param", "template parameter override NAME=VALUE (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, "club-local:", err)
		return 1
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	if *validate {
		st, err := template.Load(abs(*tmpl), template.Options{Parameters: overrides})
		if err != nil {
			fmt.Fprintln(stderr, "club-local:", err)
			return 1
		}
		fmt.Fprintf(stderr, "%s: %d tables, %d queues, %d topics, %d functions, %d state machines, %d alarms\n",
			*tmpl, len(st.Tables), len(st.Queues), len(st.Topics), len(st.Functions), len(st.StateMachines), len(st.Alarms))
		return 0
	}

	dataDir := ""
	if *persist && *engine != localcloud.EngineKumo {
		// The state directory holds kumo's snapshots: moto's data stays
		// in memory.
		log.Info("data is kept only with the kumo engine: this run's is in memory", "engine", *engine)
		if *fresh {
			fmt.Fprintln(stderr, "club-local: --fresh empties the state directory, which --engine", *engine, "does not use")
			return 2
		}
	} else if *persist {
		dataDir = filepath.Join(abs(*stateDir), "state")
		if os.Getenv(preparedEnv) != dataDir {
			// kumo reads its data directory when the process starts:
			// check the directory, then start again with it set.
			d, err := state.Open(dataDir, *fresh)
			if err != nil {
				fmt.Fprintln(stderr, "club-local:", err)
				return 1
			}
			err = execSelf([]string{
				preparedEnv + "=" + dataDir,
				localcloud.KumoDataDirEnv + "=" + d.Kumo(),
				localcloud.KumoFlushIntervalEnv + "=" + localcloud.KumoFlushIntervalOff,
			})
			fmt.Fprintln(stderr, "club-local: start again with the state directory:", err)
			return 1
		}
	} else if *fresh {
		fmt.Fprintln(stderr, "club-local: --fresh empties the state directory, which --persist=false does not use")
		return 2
	}

	cfg := localcloud.Config{
		ModuleRoot:    root,
		TemplatePath:  abs(*tmpl),
		StateDir:      abs(*stateDir),
		EndpointAddr:  *endpoint,
		APIAddr:       *api,
		APIDocs:       reference.Handler(),
		MailAddr:      *mailAddr,
		PaymentAddr:   *paymentAddr,
		NoSandboxes:   *noSandboxes,
		Parameters:    overrides,
		ScheduleSpeed: *speed,
		Logger:        log,
		Engine:        *engine,
		DataDir:       dataDir,

		SnapshotInterval: *snapshotInterval,
		Adversary:        *adversarySpec,
		AdversarySeed:    *adversarySeed,
	}
	if *tags != "" {
		cfg.BuildTags = strings.Split(*tags, ",")
	}
	if !*quiet {
		cfg.FunctionOutput = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cloud, err := localcloud.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "club-local:", err)
		return 1
	}
	<-ctx.Done()
	log.Info("stopping")
	if err := cloud.Close(); err != nil {
		fmt.Fprintln(stderr, "club-local: stop:", err)
		return 1
	}
	return 0
}

// preparedEnv tells the re-executed club-local that the state directory it
// names was checked (and emptied for --fresh) and KUMO_DATA_DIR is set.
const preparedEnv = "CLUB_LOCAL_STATE_PREPARED"

// moduleRoot finds the directory holding go.mod, from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod here or above: run club-local from the repository")
		}
		dir = parent
	}
}
