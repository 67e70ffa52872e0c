package reliability

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
	"github.com/clubdev/club/localcloud/issuer"
)

var (
	seedFlag = flag.Uint64("club.seed", 0, "seed of the run's randomness (0: a new one, printed)")
	// make test runs the default; make test-reliability runs 2,000.
	soakFlag   = flag.Int("club.soak", 200, "enrollments in the soak")
	reportFlag = flag.String("club.report", "", "write the observations to this markdown file (relative to the module root)")
	// make test-adversary runs the suite with aws and its soak with heavy;
	// the adversary decides from the run's seed.
	adversarySoakFlag = flag.Int("club.adversary-soak", 100, "enrollments in the soak under the adversary")
	// make test-adversary runs the mixed soak (TestSoakMixed) at 2,000;
	// make test leaves it off.
	mixedFlag     = flag.Int("club.mixed", 0, "enrollments in the mixed soak under heavy, with a purchase per 10 and an export per 40 (0: off)")
	adversaryFlag = flag.String("club.adversary", os.Getenv("CLUB_ADVERSARY"),
		"run the local cloud with this adversary (a profile, aws or heavy, or BEHAVIOUR=RATE,...; default $CLUB_ADVERSARY)")
)

// The stack's settings that make failures cheap to wait for. They change
// timings only, never behaviour: see docs/reliability.md.
const (
	// visibilityTimeout replaces the consumer queues' 180 s, so that work a
	// crashed consumer held comes back in seconds.
	visibilityTimeout = 6
	// sweepAfter is OutboxSweepAfterSeconds; with scheduleSpeed 10 the
	// sweeper runs every 6 s.
	sweepAfter    = "10"
	scheduleSpeed = 10
)

// harnessAttempts is how often the suite's own AWS client tries a call.
const harnessAttempts = 10

// consumerQueues are the queues whose visibility timeout the suite shortens.
var consumerQueues = []string{"NotificationsQueue", "AnalyticsQueue", "RosterQueue", "ExportsQueue"}

// deadLetterQueues are every queue a message can end in when the system
// gives up on it: the consumers' DLQs and the relay's on-failure destination.
var deadLetterQueues = []string{"NotificationsDLQ", "AnalyticsDLQ", "RosterDLQ", "ExportsDLQ", "RelayFailuresQueue"}

// stack is the local cloud under test.
var stack struct {
	// path is the stack file's path (what clubctl --stack-file reads).
	path   string
	file   *stackfile.Stack
	issuer *issuer.Issuer
	aws    aws.Config
	sqs    *sqs.Client
	db     *dynamodb.Client
	seed   uint64
	cloud  *localcloud.Cloud
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	stack.seed = *seedFlag
	if stack.seed == 0 {
		stack.seed = uint64(time.Now().UnixNano())
	}
	// On stdout so that it is in the output of a failed run.
	fmt.Printf("reliability: seed %d (replay with: go test ./reliability -args -club.seed %d)\n", stack.seed, stack.seed)
	if *adversaryFlag != "" {
		fmt.Printf("reliability: adversary %s, seed %d (replay with: go test ./reliability -args -club.adversary %s -club.seed %d)\n",
			*adversaryFlag, stack.seed, *adversaryFlag, stack.seed)
	}

	dir, err := os.MkdirTemp("", "club-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	logs := io.Discard
	if os.Getenv("CLUB_E2E_VERBOSE") != "" {
		logs = os.Stderr
	}
	problems := localcloud.NewProblemLog(200)
	// The functions' warnings and errors too, to trace a failure from its log.
	functionProblems := localcloud.NewProblemLog(2000)
	functionProblems.Source = "functions"
	// The build may take minutes on a cold cache; the start after it is
	// bounded by the local cloud's ReadyTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := moduleRoot()
	cloud, err := localcloud.Start(ctx, localcloud.Config{
		ModuleRoot:     root,
		TemplatePath:   filepath.Join(root, "infra/template.yaml"),
		StateDir:       dir,
		EndpointAddr:   freeAddr(),
		APIAddr:        freeAddr(),
		MailAddr:       freeAddr(),
		PaymentAddr:    freeAddr(),
		Adversary:      *adversaryFlag,
		AdversarySeed:  stack.seed,
		BuildTags:      buildTags(),
		Parameters:     map[string]string{"OutboxSweepAfterSeconds": sweepAfter},
		ScheduleSpeed:  scheduleSpeed,
		Logger:         slog.New(slog.NewTextHandler(io.MultiWriter(logs, problems), nil)),
		FunctionOutput: io.MultiWriter(logs, functionProblems),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local cloud:", err)
		return 1
	}
	stack.cloud = cloud
	defer func() {
		if *adversaryFlag != "" {
			st := cloud.Adversary()
			fmt.Printf("reliability: adversary %s, seed %s: %v (idempotent retries %d)\n", *adversaryFlag, st.Seed, st.Counts, st.IdempotentRetries)
		}
		if err := cloud.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "stop local cloud:", err)
		}
	}()
	if err := connect(ctx, cloud.StackFile()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		problems.Dump(os.Stderr)
		functionProblems.Dump(os.Stderr)
	}
	// The endpoint's replay of a lost answer must stay unused: AWS carries
	// a retried call out again (localcloud.CheckNoReplays).
	if err := cloud.CheckNoReplays(); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		code = 1
	}
	if code == 0 && *reportFlag != "" {
		path := *reportFlag
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := report.write(path); err != nil {
			fmt.Fprintln(os.Stderr, "write report:", err)
			return 1
		}
		fmt.Println("reliability: report written to", *reportFlag)
	}
	return code
}

// connect reads the stack outputs and shortens the consumer queues'
// visibility timeout.
func connect(ctx context.Context, path string) error {
	f, err := stackfile.Load(path)
	if err != nil {
		return err
	}
	stack.file, stack.path = f, path
	key, err := issuer.LoadKey(f.IssuerKeyPath(path))
	if err != nil {
		return err
	}
	if stack.issuer, err = issuer.New(f.IssuerURL, key); err != nil {
		return err
	}
	stack.aws = localcloud.AWSConfig(f.Endpoint)
	// The suite's own reads and moves are not the system under test: under
	// the heavy adversary four attempts can all be throttled or lose their
	// answer, so the suite's client tries longer, without a retry quota.
	stack.aws.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = harnessAttempts
			o.RateLimiter = ratelimit.None
		})
	}
	stack.sqs = sqs.NewFromConfig(stack.aws)
	stack.db = dynamodb.NewFromConfig(stack.aws)
	for _, q := range consumerQueues {
		_, err := stack.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(f.Queues[q]),
			Attributes: map[string]string{
				string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(visibilityTimeout),
			},
		})
		if err != nil {
			return fmt.Errorf("shorten the visibility timeout of %s: %w", q, err)
		}
	}
	return nil
}

// buildTags are the build tags of the stack's functions: the fault points,
// and the suite's own build's choice of the SDK mend (internal/sdkhttp).
func buildTags() []string {
	if sdkhttp.Unmended {
		return []string{"faults", "sdkhttp_unmended"}
	}
	return []string{"faults"}
}

func moduleRoot() string {
	dir, err := os.Getwd() // a test runs in its package's directory
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "..")
}

// freeAddr is an address for a server of the stack (see package freeport).
func freeAddr() string { return freeport.MustAddr() }
