package localcloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	sfnclient "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud/alarms"
	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/internal/adversary"
	"github.com/clubdev/club/localcloud/internal/billing"
	"github.com/clubdev/club/localcloud/internal/ddbfidelity"
	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/internal/esm"
	"github.com/clubdev/club/localcloud/internal/front"
	"github.com/clubdev/club/localcloud/internal/provision"
	"github.com/clubdev/club/localcloud/issuer"
	"github.com/clubdev/club/localcloud/lambdart"
	"github.com/clubdev/club/localcloud/sfn"
	sfnapi "github.com/clubdev/club/localcloud/sfn/api"
	"github.com/clubdev/club/localcloud/sfn/integrations"
	"github.com/clubdev/club/localcloud/sqsage"
	"github.com/clubdev/club/localcloud/template"
)

// Region and AccountID are the local cloud's fixed region and account.
const (
	Region    = "us-east-1"
	AccountID = "000000000000"
)

// AccessKeyID and SecretAccessKey are the credentials the local cloud gives
// its functions and tools; presigned URLs are verified against them.
const (
	AccessKeyID     = "local"
	SecretAccessKey = "local"
)

// Config configures a local cloud. Only ModuleRoot and TemplatePath are
// required; Defaults fills the rest.
type Config struct {
	// ModuleRoot is the Go module root the functions are built in.
	ModuleRoot string
	// TemplatePath is the SAM template to run.
	TemplatePath string
	// StateDir holds build output, logs, the issuer key and stack.json.
	StateDir string
	// EndpointAddr is where the AWS APIs are served (host:port).
	EndpointAddr string
	// APIAddr is where the HTTP API is served (host:port).
	APIAddr string
	// APIDocs, when set, is served on the HTTP API's GET /docs: the API
	// reference page (package api/reference, plugged in by the caller).
	APIDocs http.Handler
	// Parameters override template parameters.
	Parameters map[string]string
	// LocalParameters are values the local cloud offers (sandbox URLs,
	// secrets); each applies only if the template declares that parameter
	// and Parameters does not set it.
	LocalParameters map[string]string
	// JWTAudience is the audience the local authorizers accept; the issuer
	// is always the local one.
	JWTAudience string
	// BuildTags are passed to go build for every function.
	BuildTags []string
	// BuildCacheDir holds built function binaries by content (see
	// lambdart.BuildCache), shared by every local cloud of the module:
	// `make run` and each test package compile a function once between
	// them. Default: ModuleRoot/.club/cache/functions.
	BuildCacheDir string
	// ReadyTimeout bounds the start once the functions are built:
	// provisioning, starting the function processes and the first health
	// check. The build itself is bounded only by ctx, since a cold build on
	// a small machine can take minutes. Default: 3 minutes.
	ReadyTimeout time.Duration
	// ScheduleSpeed runs schedules faster than real time (60: a minute per
	// second); 1 is real time.
	ScheduleSpeed float64
	// Logger receives the local cloud's own log.
	Logger *slog.Logger
	// FunctionOutput, if set, receives every function's output, each line
	// prefixed with the function name. Logs are always in StateDir/logs.
	FunctionOutput io.Writer
	// MailAddr and PaymentAddr are where the mail and payment sandboxes
	// listen (host:port); NoSandboxes turns both off.
	MailAddr    string
	PaymentAddr string
	NoSandboxes bool
	// Engine serves the data plane: EngineKumo (default, in process) or
	// EngineMoto (moto's server as a child process; see engine.go).
	Engine string
	// DataDir, if set, is a state directory (package state) the cloud
	// keeps its data in across restarts: kumo's snapshots (the process
	// must have been started with KUMO_DATA_DIR=DataDir/kumo), the stream
	// log, the mappings' checkpoints, executions, sandboxes (persist.go).
	// Empty: all in memory. The kumo engine only.
	DataDir string
	// SnapshotInterval is how often kumo's changed data is written to
	// DataDir (stretched when a snapshot takes long: persist.go). Default 1 s.
	SnapshotInterval time.Duration
	// Adversary, when set, makes the cloud misbehave as AWS is documented
	// to once the stack is up: a profile ("aws", "heavy") or
	// BEHAVIOUR=RATE entries (package adversary). AdversarySeed seeds its
	// decisions (0: one from the clock, logged).
	Adversary     string
	AdversarySeed uint64
}

// extra is a service that runs alongside the stack, such as a sandbox: its
// port is claimed first, it starts after the stack is provisioned and stops
// before it.
type extra struct {
	name  string
	addr  string
	start func(ln net.Listener) error
	stop  func(ctx context.Context) error
}

// Defaults fills unset fields of c.
func (c *Config) Defaults() {
	if c.StateDir == "" {
		c.StateDir = filepath.Join(c.ModuleRoot, ".club")
	}
	if c.EndpointAddr == "" {
		c.EndpointAddr = "127.0.0.1:4566"
	}
	if c.APIAddr == "" {
		c.APIAddr = "127.0.0.1:3000"
	}
	if c.JWTAudience == "" {
		c.JWTAudience = "club-local"
	}
	if c.MailAddr == "" {
		c.MailAddr = "127.0.0.1:4580"
	}
	if c.PaymentAddr == "" {
		c.PaymentAddr = "127.0.0.1:4581"
	}
	if c.BuildCacheDir == "" {
		c.BuildCacheDir = filepath.Join(c.ModuleRoot, ".club", "cache", "functions")
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 3 * time.Minute
	}
	if c.ScheduleSpeed <= 0 {
		c.ScheduleSpeed = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.ModuleRoot == "" {
		errs = append(errs, errors.New("ModuleRoot is required"))
	}
	if c.TemplatePath == "" {
		errs = append(errs, errors.New("TemplatePath is required"))
	}
	if _, err := adversary.Parse(c.Adversary); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Cloud is a running local cloud. Close stops it.
type Cloud struct {
	cfg   Config
	log   *slog.Logger
	stack *template.Stack
	ready atomic.Bool

	engine  dataPlane
	counter *front.Counter
	// meter counts billed units when switched on (GET /_club/units).
	meter *billing.Meter
	// queueAges watches the SQS calls to know each queue's oldest message
	// without receiving (GET /_club/queues/age).
	queueAges *sqsage.Tracker
	// metrics are the datapoints the alarms are evaluated on: the
	// functions' EMF metrics and the service metrics the evaluator reads.
	metrics *alarms.Metrics
	streams *ddbstream.Log
	runtime *lambdart.Runtime
	sfn     *sfn.Service
	front   *front.Front
	// fidelity is the DynamoDB data path's first stop: it refuses what the
	// engine would carry out otherwise and corrects what it can.
	fidelity *ddbfidelity.Handler
	endpoint *http.Server
	gateway  *gateway.Gateway
	issuer   *issuer.Issuer
	extras   []extra

	sqsPollers    map[string]*esm.SQSPoller
	streamPollers map[string]*esm.StreamPoller
	persist       *persistence // nil: in memory
	// adversary misbehaves as AWS may; off unless Config.Adversary is set
	// or a test sets it at /_club/adversary.
	adversary *adversary.Adversary

	cancel  context.CancelFunc
	workers sync.WaitGroup
	// stopFollowing ends the copying of the engine's stream records
	// (EngineMoto); followers waits for it.
	stopFollowing context.CancelFunc
	followers     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	stackFile string
	// webhookSecret is the payment sandbox's signing secret ("" without
	// sandboxes), put into SSM for the API (sandboxes.go).
	webhookSecret string
}

// Start builds, starts and provisions everything the template declares and
// returns once the stack answers. It runs the stages of startStages in
// order; when one fails it undoes what the earlier ones started (Close, and
// the ports not yet handed to a server) and returns the error, named by its
// cause: it never leaves a half-started stack.
func Start(ctx context.Context, cfg Config) (_ *Cloud, err error) {
	cfg.Defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cloud{cfg: cfg, log: cfg.Logger, counter: front.NewCounter(), meter: billing.New(nil), streams: ddbstream.NewLog(),
		metrics: alarms.NewMetrics(), adversary: adversary.New(adversarySeed(cfg.AdversarySeed))}
	s := &startup{ctx: ctx, begin: time.Now()}
	defer func() {
		if s.cancelReady != nil {
			s.cancelReady()
		}
		if err != nil {
			s.closePorts()
			_ = c.Close()
		}
	}()
	for _, stage := range c.startStages() {
		t0 := time.Now()
		if err := stage.run(s); err != nil {
			return nil, err
		}
		c.log.Debug("start stage done", "stage", stage.name, "took", time.Since(t0).Round(time.Millisecond))
	}
	if err := c.startAdversary(); err != nil {
		return nil, err
	}
	c.ready.Store(true)
	c.log.Info("local cloud ready", "endpoint", s.endpointURL, "api", s.apiURL, "stack_file", c.stackFile,
		"took", time.Since(s.begin).Round(time.Millisecond))
	return c, nil
}

// startup is what one start stage hands the next.
type startup struct {
	// ctx bounds the stages; after the build it is also bounded by
	// ReadyTimeout (cancelReady).
	ctx         context.Context
	cancelReady context.CancelFunc
	begin       time.Time

	endpointLn, apiLn net.Listener
	extras            []extra
	extraLns          []net.Listener

	endpointURL, apiURL, issuerURL string
	binaries                       map[string]string
	awsCfg                         aws.Config
	res                            *provision.Result
	// runCtx lives as long as the cloud: the workers' context (Close
	// cancels it).
	runCtx context.Context
}

// closePorts closes every claimed port; one already handed to a server is
// closed by that server's stop as well, which is harmless.
func (s *startup) closePorts() {
	for _, ln := range append([]net.Listener{s.endpointLn, s.apiLn}, s.extraLns...) {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// startStage is one step of Start. Close undoes what it started.
type startStage struct {
	name string
	run  func(*startup) error
}

// startStages are the steps of Start, in order.
func (c *Cloud) startStages() []startStage {
	return []startStage{
		{"state directory", c.openState},
		// Every port first: a busy port must stop us before anything runs.
		{"ports", c.claimPorts},
		{"template and build", c.loadAndBuild},
		{"engine and endpoint", c.startEndpoint},
		{"resources", c.provisionResources},
		{"functions", c.startFunctions},
		{"event plane", c.startEventPlane},
		{"HTTP API", c.startAPI},
		{"sandboxes", c.startExtras},
		{"stack file", c.writeStackFile},
	}
}

func (c *Cloud) openState(*startup) (err error) {
	c.persist, err = openPersistence(c.cfg, c.streams)
	return err
}

func (c *Cloud) claimPorts(s *startup) (err error) {
	if s.endpointLn, err = listen("AWS endpoint", c.cfg.EndpointAddr); err != nil {
		return err
	}
	if s.apiLn, err = listen("HTTP API", c.cfg.APIAddr); err != nil {
		return err
	}
	if s.extras, err = c.sandboxes(); err != nil {
		return err
	}
	for _, x := range s.extras {
		ln, err := listen(x.name, x.addr)
		if err != nil {
			return err
		}
		s.extraLns = append(s.extraLns, ln)
	}
	s.endpointURL = "http://" + s.endpointLn.Addr().String()
	s.apiURL = "http://" + s.apiLn.Addr().String()
	s.issuerURL = s.apiURL + "/issuer"
	return nil
}

func (c *Cloud) loadAndBuild(s *startup) (err error) {
	if c.stack, err = loadTemplate(c.cfg, s.endpointURL); err != nil {
		return fmt.Errorf("template %s: %w", c.cfg.TemplatePath, err)
	}
	binaries, report, err := c.build(s.ctx)
	if err != nil {
		return err
	}
	s.binaries = binaries
	c.log.Info("functions built", "count", len(binaries), "compiled", len(report.Built), "reused", len(report.Reused),
		"took", time.Since(s.begin).Round(time.Millisecond))
	// From here on the start is bounded: a stack that does not come up in
	// ReadyTimeout is broken, whereas the build only took long.
	s.ctx, s.cancelReady = context.WithTimeout(s.ctx, c.cfg.ReadyTimeout)
	return nil
}

// startEndpoint starts the engine's SDK-facing services, the Lambda runtime
// and the Step Functions executor, and our front on the endpoint.
func (c *Cloud) startEndpoint(s *startup) (err error) {
	cfg := c.cfg
	os.Setenv("AWS_DEFAULT_REGION", Region)
	if c.engine, err = startEngine(s.ctx, cfg.Engine, filepath.Join(cfg.StateDir, "logs"), c.log); err != nil {
		return err
	}
	c.runtime = lambdart.New(lambdart.Options{
		RuntimeAPIHost: s.endpointLn.Addr().String(),
		Env: map[string]string{
			"AWS_ENDPOINT_URL":      s.endpointURL,
			"AWS_ACCESS_KEY_ID":     AccessKeyID,
			"AWS_SECRET_ACCESS_KEY": SecretAccessKey,
		},
		LogDir:    filepath.Join(cfg.StateDir, "logs"),
		LogWriter: cfg.FunctionOutput,
		// CloudWatch Logs turns the functions' EMF lines into metrics; the
		// alarms are evaluated on them.
		LogLine: c.putEMF,
		// AWS waits about 1 and 2 minutes between async retries; locally
		// that would only slow feedback down.
		AsyncRetryDelays: []time.Duration{time.Second, 2 * time.Second},
	})
	s.awsCfg = AWSConfig(s.endpointURL)
	// Step Functions runs in our executor; its service integrations call the
	// front, so DynamoDB writes from a state machine are recorded too.
	sfnResources := sfn.NewResources()
	integrations.Register(sfnResources, integrations.FromAWSConfig(s.awsCfg, c.adversaryInvoker(adversary.SFNTaskRerun)))
	c.sfn = sfn.New(sfn.Options{Resources: sfnResources, Region: Region, Account: AccountID})
	frontOpts := []front.Option{front.WithCredentials(map[string]string{AccessKeyID: SecretAccessKey}),
		front.WithLogger(c.log.With("component", "endpoint"))}
	recorderOpts := []ddbstream.Option{ddbstream.WithLogger(c.log)}
	if cfg.Engine == EngineMoto {
		frontOpts = append(frontOpts, front.WithMotoEngine())
	} else if k, ok := c.engine.(kumoEngine); ok && k.Handler() != nil {
		frontOpts = append(frontOpts, front.WithEngineHandler(k.Handler()))
	}
	f, err := front.New(c.engine.URL(), front.Routes{}, c.counter, frontOpts...)
	if err != nil {
		return err
	}
	if cfg.Engine == EngineMoto {
		recorderOpts = append(recorderOpts, ddbstream.WithEngineRecords(f.EngineExclusive))
	}
	c.front = f
	c.meter.SetEngine(f.Kumo())
	c.queueAges = sqsage.New(f.Kumo(), nil)
	recorder := ddbstream.NewRecorder(c.streams, f.Kumo(), recorderOpts...)
	if cfg.Engine == EngineMoto {
		followCtx, stopFollowing := context.WithCancel(context.Background())
		c.stopFollowing = stopFollowing
		c.followers.Add(1)
		go func() {
			defer c.followers.Done()
			recorder.FollowEngine(followCtx)
		}()
	}
	var besideEngine map[string]http.Handler
	if u := c.engine.KumoURL(); u != "" {
		ku, err := url.Parse(u)
		if err != nil {
			return err
		}
		besideEngine = map[string]http.Handler{}
		for _, svc := range engine.KumoServices {
			besideEngine[svc] = front.NewProxy(ku)
		}
	}
	sqsRoute, err := c.persist.keepInFlight(s.ctx, c.queueAges)
	if err != nil {
		return err
	}
	engineName := cfg.Engine
	if engineName == "" {
		engineName = EngineKumo
	}
	c.fidelity = ddbfidelity.New(recorder, f.Kumo(), ddbfidelity.ProfileOf(engineName))
	f.SetRoutes(front.Routes{
		Services:      besideEngine,
		Runtime:       c.runtime.RuntimeHandler(),
		Invoke:        c.runtime.InvokeHandler(),
		DynamoDB:      c.fidelity,
		Streams:       ddbstream.NewAPI(c.streams),
		StepFunctions: sfnapi.NewHandler(c.sfn),
		Control:       c.controlHandler(),
		Fallback:      sqsRoute,
	})
	var handler http.Handler = c.meter.Wrap(f)
	if adversaryLayer {
		f.ReplayUnless(c.adversary.On)
		handler = c.adversary.Handler(handler, f.Kumo())
	}
	c.endpoint = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.endpoint.Serve(s.endpointLn) }()
	return nil
}

// provisionResources creates the template's resources through the
// endpoint, the webhook secret and the state machines.
func (c *Cloud) provisionResources(s *startup) (err error) {
	if s.res, err = provision.Apply(s.ctx, s.awsCfg, s.endpointURL, c.stack, provision.Options{}); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	if err := c.putWebhookSecret(s.ctx, s.awsCfg); err != nil {
		return err
	}
	return c.createStateMachines(s.ctx)
}

// startFunctions starts every function's processes and waits until each
// has polled the Runtime API.
func (c *Cloud) startFunctions(s *startup) error {
	for _, fn := range c.stack.Functions {
		if err := c.runtime.AddFunction(lambdart.FunctionConfig{
			Name: fn.Name, Binary: s.binaries[fn.Source], Env: fn.Environment,
			Timeout: fn.Timeout, MemoryMB: fn.MemorySize, Concurrency: concurrency(fn),
		}); err != nil {
			return fmt.Errorf("function %s: %w", fn.Source, err)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel, s.runCtx = cancel, runCtx
	if err := c.runtime.Start(runCtx); err != nil {
		return fmt.Errorf("start functions: %w", err)
	}
	readyCtx, readyCancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer readyCancel()
	if err := c.runtime.Ready(readyCtx); err != nil {
		return fmt.Errorf("functions did not start: %w (see %s)", err, filepath.Join(c.cfg.StateDir, "logs"))
	}
	return nil
}

// startEventPlane resumes the kept executions and starts the event source
// mappings, schedules and alarms.
func (c *Cloud) startEventPlane(s *startup) error {
	if err := c.persist.resumeExecutions(c.sfn); err != nil {
		return err
	}
	if err := c.startMappings(s.runCtx, s.awsCfg, s.res); err != nil {
		return err
	}
	if err := c.startSchedules(s.runCtx); err != nil {
		return err
	}
	return c.startAlarms(s.ctx, s.runCtx, s.awsCfg, s.res)
}

// startAPI opens the local token issuer and serves the HTTP API.
func (c *Cloud) startAPI(s *startup) (err error) {
	if c.issuer, err = issuer.Open(s.issuerURL, filepath.Join(c.cfg.StateDir, "issuer-key.pem")); err != nil {
		return fmt.Errorf("local issuer: %w", err)
	}
	if c.gateway, err = gateway.New(c.gatewayConfig(s.issuerURL)); err != nil {
		return fmt.Errorf("HTTP API: %w", err)
	}
	if err := c.gateway.StartListener(s.apiLn); err != nil {
		return fmt.Errorf("HTTP API: %w", err)
	}
	return nil
}

// startExtras starts the sandboxes on the ports claimed for them.
func (c *Cloud) startExtras(s *startup) error {
	for i, x := range s.extras {
		if err := x.start(s.extraLns[i]); err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		c.extras = append(c.extras, x)
	}
	return nil
}

func (c *Cloud) writeStackFile(s *startup) error {
	c.stackFile = filepath.Join(c.cfg.StateDir, "stack.json")
	return c.stackOutputs(s.endpointURL, s.apiURL, s.issuerURL, s.res).Save(c.stackFile)
}

// loadTemplate parses the template with the parameters the local cloud offers
// and the caller's overrides.
func loadTemplate(cfg Config, endpointURL string) (*template.Stack, error) {
	declared, err := declaredParameters(cfg.TemplatePath)
	if err != nil {
		return nil, err
	}
	params := map[string]string{}
	for k, v := range cfg.LocalParameters {
		if declared[k] {
			params[k] = v
		}
	}
	for k, v := range cfg.Parameters {
		params[k] = v
	}
	return template.Load(cfg.TemplatePath, template.Options{
		Region: Region, AccountID: AccountID, Endpoint: endpointURL, Parameters: params,
		HTTPAPIURL: "http://" + cfg.APIAddr,
	})
}

// AWSConfig is an SDK configuration for the local endpoint, with the
// club's mended HTTP client (internal/sdkhttp).
func AWSConfig(endpointURL string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		BaseEndpoint: aws.String(endpointURL),
		HTTPClient:   sdkhttp.New(),
	}
}

// Stack returns the parsed template the cloud runs.
func (c *Cloud) Stack() *template.Stack { return c.stack }

// StackFile returns the path of the stack outputs file.
func (c *Cloud) StackFile() string { return c.stackFile }

// Close stops everything in reverse order of start: the extras, the HTTP API,
// pollers and schedules, the function processes, the endpoint and the engine.
// No child process survives it. It is safe to call more than once.
func (c *Cloud) Close() error {
	c.closeOnce.Do(func() {
		c.ready.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		for i := len(c.extras) - 1; i >= 0; i-- {
			if err := c.extras[i].stop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.extras[i].name, err))
			}
		}
		if c.gateway != nil {
			errs = append(errs, c.gateway.Shutdown(ctx))
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.workers.Wait()
		if c.sfn != nil {
			c.persist.stopExecutions(c.sfn)
		}
		if c.runtime != nil {
			errs = append(errs, c.runtime.Stop())
		}
		if c.stopFollowing != nil {
			c.stopFollowing()
			c.followers.Wait()
		}
		if c.endpoint != nil {
			c.persist.drain(c.endpoint)
			_ = c.endpoint.Close()
		}
		errs = append(errs, c.persist.close())
		if c.engine != nil {
			errs = append(errs, c.engine.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// listen claims addr or says which part of the stack could not have it.
func listen(what, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot listen on %s (is another local cloud running?): %w", what, addr, err)
	}
	return ln, nil
}

// build compiles every function of the template through the build cache,
// returning the path of each bootstrap binary by logical ID.
func (c *Cloud) build(ctx context.Context) (map[string]string, lambdart.BuildReport, error) {
	specs := make([]lambdart.BuildSpec, 0, len(c.stack.Functions))
	out := make(map[string]string, len(c.stack.Functions))
	for _, fn := range c.stack.Functions {
		bin := filepath.Join(c.cfg.StateDir, "build", fn.Source, "bootstrap")
		out[fn.Source] = bin
		specs = append(specs, lambdart.BuildSpec{
			Name: fn.Source, Dir: fn.CodeDir, ModuleRoot: c.cfg.ModuleRoot, Out: bin, Tags: c.cfg.BuildTags,
		})
	}
	report, err := lambdart.BuildCache{Dir: c.cfg.BuildCacheDir}.BuildAll(ctx, specs, 2)
	if err != nil {
		return nil, report, err
	}
	return out, report, nil
}

// httpAPIConcurrency is the number of processes of a function behind the
// HTTP API. On AWS such a function scales out with its requests; locally its
// processes spend most of a request waiting on DynamoDB, so with only two
// of them requests queue long before the machine is busy (make bench).
const httpAPIConcurrency = 8

// concurrency is the number of processes a function gets: its reserved
// concurrency, else enough for its SQS mappings' maximum concurrency, and
// httpAPIConcurrency for a function behind the HTTP API.
func concurrency(fn template.Function) int {
	if fn.ReservedConcurrency != nil && *fn.ReservedConcurrency > 0 {
		return *fn.ReservedConcurrency
	}
	n := 2
	if len(fn.HTTPAPIEvents) > 0 {
		n = httpAPIConcurrency
	}
	for _, ev := range fn.SQSEvents {
		m := ev.MaximumConcurrency
		if m == 0 {
			m = esm.DefaultMaximumConcurrency
		}
		n = max(n, m)
	}
	return n
}

// startMappings runs the template's event source mappings with the settings
// from the template (kumo keeps only a few of them).
func (c *Cloud) startMappings(ctx context.Context, awsCfg aws.Config, res *provision.Result) error {
	// The pollers and the destinations call the endpoint's handler in this
	// process (front.NewTransport): no connection, no second copy of each
	// answer, and no answer lost on a loopback connection
	// (docs/local-cloud.md); the calls meet all that the endpoint's other
	// callers meet.
	awsCfg.HTTPClient = &http.Client{Transport: front.NewTransport(c.endpoint.Handler)}
	sqsClient := sqs.NewFromConfig(awsCfg)
	dest := esm.NewDestinations(sqsClient, sns.NewFromConfig(awsCfg))
	c.sqsPollers = map[string]*esm.SQSPoller{}
	c.streamPollers = map[string]*esm.StreamPoller{}
	for _, fn := range c.stack.Functions {
		for _, ev := range fn.SQSEvents {
			q, ok := c.stack.QueueByARN(ev.QueueARN)
			if !ok {
				return fmt.Errorf("function %s event %s: queue %s is not in the template", fn.Source, ev.Name, ev.QueueARN)
			}
			key := fn.Source + "." + ev.Name
			p, err := esm.NewSQSPoller(esm.SQSMapping{
				UUID: res.EventSourceMappings[key], FunctionName: fn.Name, QueueURL: q.URL, QueueARN: q.ARN,
				BatchSize: ev.BatchSize, MaximumBatchingWindow: ev.MaximumBatchingWindow,
				ReportBatchItemFailures: ev.ReportBatchItemFailures, MaximumConcurrency: ev.MaximumConcurrency,
				Enabled: ev.Enabled,
			}, sqsClient, c.adversaryInvoker(adversary.LambdaRedeliver), c.log, esm.WithReceiveReleaser(front.ReceiveTokenHeader, c.front))
			if err != nil {
				return fmt.Errorf("function %s event %s: %w", fn.Source, ev.Name, err)
			}
			c.sqsPollers[key] = p
			c.run(ctx, key, p.Run)
		}
		for _, ev := range fn.DynamoDBEvents {
			key := fn.Source + "." + ev.Name
			var filters []string
			if ev.FilterCriteria != nil {
				filters = ev.FilterCriteria.Patterns
			}
			p, err := esm.NewStreamPoller(esm.StreamMapping{
				UUID: res.EventSourceMappings[key], FunctionName: fn.Name, StreamARN: ev.StreamARN,
				ShardID: ddbstream.ShardID, StartingPosition: ev.StartingPosition, BatchSize: ev.BatchSize,
				MaximumBatchingWindow: ev.MaximumBatchingWindow, Filters: filters,
				BisectBatchOnFunctionError: ev.BisectBatchOnFunctionError, MaximumRetryAttempts: ev.MaximumRetryAttempts,
				MaximumRecordAge: ev.MaximumRecordAge, ReportBatchItemFailures: ev.ReportBatchItemFailures,
				OnFailure: ev.OnFailureDestination, Enabled: ev.Enabled,
				ResumeAfter: c.persist.resumeAfter(key), OnCheckpoint: c.persist.onCheckpoint(key),
			}, c.streams, c.adversaryInvoker(adversary.LambdaRedeliver), dest, c.log)
			if err != nil {
				return fmt.Errorf("function %s event %s: %w", fn.Source, ev.Name, err)
			}
			c.streamPollers[key] = p
			c.run(ctx, key, p.Run)
		}
	}
	return nil
}

// createStateMachines creates the template's state machines in the local
// executor (definitions already carry their substitutions). An invalid
// definition stops the start with the executor's diagnostics.
func (c *Cloud) createStateMachines(ctx context.Context) error {
	for _, sm := range c.stack.StateMachines {
		got, err := c.sfn.CreateStateMachine(ctx, sfn.CreateStateMachineInput{
			Name: sm.Name, Definition: string(sm.Definition), RoleArn: sm.Role, Type: sm.Type,
		})
		if err != nil {
			return fmt.Errorf("state machine %s: %w", sm.Source, err)
		}
		if got.ARN != sm.ARN {
			return fmt.Errorf("state machine %s: created as %s, the template says %s", sm.Source, got.ARN, sm.ARN)
		}
	}
	return nil
}

// run starts a worker that lives until ctx ends.
func (c *Cloud) run(ctx context.Context, name string, fn func(context.Context) error) {
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("worker stopped", "worker", name, "error", err)
		}
	}()
}

// putEMF records the metrics of a function's Embedded Metric Format log
// line, as CloudWatch Logs does; a line that is not one is ignored, a
// malformed one is logged (CloudWatch Logs drops it, and so does this).
func (c *Cloud) putEMF(function string, line []byte) {
	if !bytes.Contains(line, []byte(`"_aws"`)) {
		return
	}
	if _, err := c.metrics.PutEMF(line); err != nil && !errors.Is(err, alarms.ErrNotEMF) {
		c.log.Warn("a function's EMF line was not turned into metrics", "function", function, "error", err)
	}
}

// startAlarms creates the template's alarms in the emulator and evaluates
// them from now on (package alarms), so that they fire locally and notify
// their topics as on AWS.
func (c *Cloud) startAlarms(ctx, runCtx context.Context, awsCfg aws.Config, res *provision.Result) error {
	if len(c.stack.Alarms) == 0 {
		return nil
	}
	urls := make(map[string]string, len(res.Queues))
	for _, u := range res.Queues {
		urls[u[strings.LastIndexByte(u, '/')+1:]] = u
	}
	ev := &alarms.Evaluator{
		Alarms:     c.stack.Alarms,
		CloudWatch: cloudwatch.NewFromConfig(awsCfg),
		SQS:        sqs.NewFromConfig(awsCfg),
		Ages: func(url string) (float64, bool) {
			// An empty queue's age is 0; a queue whose messages are not
			// dated yet (SNS deliveries nobody received) has no datapoint.
			a := c.queueAges.Oldest(url)
			return a.AgeSeconds, a.Known
		},
		Metrics:       c.metrics,
		StepFunctions: sfnclient.NewFromConfig(awsCfg),
		QueueURLs:     urls,
		Log:           c.log.With("component", "alarms"),
		Region:        Region,
		AccountID:     AccountID,
	}
	if c.engine.KumoURL() != "" {
		// The alarms live in kumo beside the engine, whose topics kumo
		// cannot reach: the evaluator publishes the notifications itself.
		topics := sns.NewFromConfig(awsCfg)
		ev.Notify = func(ctx context.Context, topic, subject string, msg []byte) error {
			_, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Subject: aws.String(subject), Message: aws.String(string(msg))})
			return err
		}
	}
	if err := ev.Create(ctx); err != nil {
		return fmt.Errorf("alarms: %w", err)
	}
	c.run(runCtx, "alarms", ev.Run)
	return nil
}

// gatewayConfig maps the template's HTTP APIs onto the local gateway. The
// authorizers keep the template's rules but trust the local issuer.
func (c *Cloud) gatewayConfig(issuerURL string) gateway.Config {
	cfg := gateway.Config{
		Addr:        c.cfg.APIAddr,
		Authorizers: map[string]gateway.JWTAuthorizer{},
		Invoker:     c.runtime,
		Health:      c.ready.Load,
		Issuer:      c.issuer,
		Docs:        c.cfg.APIDocs,
		Logger:      c.log,
	}
	for _, api := range c.stack.HTTPAPIs {
		for name, a := range api.Authorizers {
			cfg.Authorizers[name] = gateway.JWTAuthorizer{
				Issuer: issuerURL, Audience: []string{c.cfg.JWTAudience}, IdentitySource: a.IdentitySource,
			}
		}
	}
	for _, fn := range c.stack.Functions {
		for _, ev := range fn.HTTPAPIEvents {
			cfg.Routes = append(cfg.Routes, gateway.Route{
				Method: ev.Method, Path: ev.Path, FunctionName: fn.Name, Authorizer: ev.Authorizer,
			})
		}
	}
	sort.Slice(cfg.Routes, func(i, j int) bool {
		return cfg.Routes[i].Path+cfg.Routes[i].Method < cfg.Routes[j].Path+cfg.Routes[j].Method
	})
	return cfg
}

// stackOutputs is what .club/stack.json records for tools and tests.
func (c *Cloud) stackOutputs(endpointURL, apiURL, issuerURL string, res *provision.Result) *stackfile.Stack {
	// Like CloudFormation's stack description, the outputs carry the
	// parameter values (clubctl reads retention and age limits from them),
	// except secrets; a template output of the same name wins.
	outputs := map[string]string{}
	for name, v := range c.stack.Parameters {
		if !c.stack.NoEchoParameters[name] {
			outputs[name] = v
		}
	}
	for name, v := range res.Outputs {
		outputs[name] = v
	}
	st := &stackfile.Stack{
		Endpoint:      endpointURL,
		APIURL:        apiURL,
		IssuerURL:     issuerURL,
		JWTAudience:   c.cfg.JWTAudience,
		IssuerKeyFile: "issuer-key.pem",
		Tables:        res.Tables,
		Queues:        res.Queues,
		Topics:        res.Topics,
		Functions:     res.Functions,
		StateMachines: res.StateMachines,
		Buckets:       res.Buckets,
		Outputs:       outputs,
	}
	if !c.cfg.NoSandboxes {
		st.MailURL = "http://" + c.cfg.MailAddr
		st.PaymentURL = "http://" + c.cfg.PaymentAddr
	}
	return st
}
