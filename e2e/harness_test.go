package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/api/reference"
	"github.com/clubdev/club/internal/apicontract"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/internal/userpool"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
	"github.com/clubdev/club/localcloud/issuer"
)

// stack is the deployed stack under test and how to reach it.
var stack struct {
	file *stackfile.Stack
	path string // of the stack file, for programs that read it (clubctl)
	// The callers' tokens come from the local cloud's issuer (issuer) or,
	// on a stack that trusts its own Cognito user pool (LocalStack, AWS,
	// deployed with EnableTestUsers=true), from users the suite makes in
	// that pool and signs in through its test app client (users).
	issuer *issuer.Issuer
	users  *userpool.TestUsers
	aws    aws.Config
	sqs    *sqs.Client
}

// runID keeps the ids of one run apart from another's on a shared stack.
var runID = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

// runMain targets the stack named by CLUB_STACK_FILE (LocalStack, AWS) or,
// by default, starts the embedded local cloud with infra/template.yaml.
func runMain(m *testing.M) (code int) {
	path := os.Getenv("CLUB_STACK_FILE")
	if path == "" {
		dir, err := os.MkdirTemp("", "club-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		root := moduleRoot()
		// The build may take minutes on a cold cache; the start after it is
		// bounded by the local cloud's ReadyTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		logs := io.Discard
		if os.Getenv("CLUB_E2E_VERBOSE") != "" {
			logs = os.Stderr
		}
		problems := localcloud.NewProblemLog(200)
		// The functions' warnings and errors too: a failure in CI is then
		// traced from its log (a mail retried, parked, refused).
		functionProblems := localcloud.NewProblemLog(2000)
		functionProblems.Source = "functions"
		defer func() {
			if code != 0 {
				problems.Dump(os.Stderr)
				functionProblems.Dump(os.Stderr)
			}
		}()
		// make test-adversary runs the suite with the adversary on
		// (CLUB_ADVERSARY=aws); its seed is printed, and again beside the
		// adversary's counts when the suite fails.
		adversary, adversarySeed := os.Getenv("CLUB_ADVERSARY"), uint64(0)
		if adversary != "" {
			adversarySeed = uint64(time.Now().UnixNano())
			if s := os.Getenv("CLUB_ADVERSARY_SEED"); s != "" {
				if adversarySeed, err = strconv.ParseUint(s, 10, 64); err != nil {
					fmt.Fprintln(os.Stderr, "CLUB_ADVERSARY_SEED:", err)
					return 1
				}
			}
			fmt.Printf("e2e: adversary %s, seed %d (replay with CLUB_ADVERSARY=%s CLUB_ADVERSARY_SEED=%d)\n",
				adversary, adversarySeed, adversary, adversarySeed)
		}
		cloud, err := localcloud.Start(ctx, localcloud.Config{
			Adversary:     adversary,
			AdversarySeed: adversarySeed,
			ModuleRoot:    root,
			TemplatePath:  filepath.Join(root, "infra/template.yaml"),
			StateDir:      dir,
			EndpointAddr:  freeAddr(),
			APIAddr:       freeAddr(),
			APIDocs:       reference.Handler(),
			MailAddr:      freeAddr(),
			PaymentAddr:   freeAddr(),
			ScheduleSpeed: 10,
			BuildTags:     functionTags(),
			// make test-moto runs the suite with the data plane on moto.
			Engine: os.Getenv("CLUB_ENGINE"),
			// Scaled so that tests wait seconds: the export link's expiry, the
			// payment provider's call timeout (1 s for 10 s, as the outage
			// test scales its hold and its outage by a tenth), and the
			// notifier's backoff cap and probe interval (1 s for 30 s and
			// 5 s, the template's least; the probe interval may not exceed
			// the cap: the mail outage test waits for 20 probes, which then
			// take about 20 s; make run keeps 30 s and 5 s), and the urgent
			// class's maximum age (20 s for 60 s: the mail outage test's
			// alarm fires once mail has been owed that long, during its
			// probes; the flood test holds every mail to it).
			Parameters: map[string]string{
				"ExportUrlExpirySeconds": "10", "PaymentTimeoutSeconds": "1",
				"NotificationRetryCapSeconds": "1", "NotificationProbeIntervalSeconds": "1",
				"UrgentMaxAgeSeconds": "20",
			},
			Logger:         slog.New(slog.NewTextHandler(io.MultiWriter(logs, problems), nil)),
			FunctionOutput: io.MultiWriter(logs, functionProblems),
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start local cloud:", err)
			return 1
		}
		defer func() {
			if adversary != "" {
				st := cloud.Adversary()
				fmt.Printf("e2e: adversary %s, seed %s: %v (idempotent retries %d)\n", adversary, st.Seed, st.Counts, st.IdempotentRetries)
			}
			if err := cloud.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "stop local cloud:", err)
			}
		}()
		// The endpoint's replay of a lost answer must stay unused: AWS
		// carries a retried call out again (localcloud.CheckNoReplays).
		defer func() {
			if err := cloud.CheckNoReplays(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e:", err)
				code = 1
			}
		}()
		path = cloud.StackFile()
	}
	f, err := stackfile.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stack.file = f
	stack.path = path
	if f.IssuerKeyFile != "" {
		key, err := issuer.LoadKey(f.IssuerKeyPath(path))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if stack.issuer, err = issuer.New(f.IssuerURL, key); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// Every answer of the HTTP API the suite receives, through call, post or
	// any other request on http.DefaultClient, is checked against
	// api/openapi.yaml: one that the document does not allow becomes the
	// request's error, which fails the test that sent it.
	contract, err := apicontract.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if http.DefaultClient.Transport, err = contract.Transport(f.APIURL, http.DefaultTransport); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		fmt.Fprintf(os.Stderr, "e2e: %d answers of the HTTP API checked against api/openapi.yaml\n", contract.Checked())
	}()
	stack.aws = localcloud.AWSConfig(f.Endpoint)
	stack.sqs = sqs.NewFromConfig(stack.aws)
	if stack.issuer == nil {
		if stack.users, err = cognitoUsers(f, stack.aws); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := waitersInParallel(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code = m.Run()
	stopBrowser()
	if clubctlDir != "" {
		_ = os.RemoveAll(clubctlDir)
	}
	return code
}

// parallelWaiters is how many of the suite's parallel tests run at once
// unless -parallel says otherwise. Go's default is GOMAXPROCS (2 on the
// machines CI runs on), but these tests spend their time waiting on the
// stack (alarm periods, expiring holds, an outage), not on a core: two at a
// time would queue the waits one after another.
const parallelWaiters = 16

// waitersInParallel sets -test.parallel to parallelWaiters when the command
// line did not set it.
func waitersInParallel() error {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return nil
	}
	return flag.Set("test.parallel", strconv.Itoa(parallelWaiters))
}

// cognitoUsers is the token source of a stack without the local issuer: its
// own user pool (output UserPoolId) and the test app client a deploy with
// EnableTestUsers=true adds (output TestUsersClientId).
func cognitoUsers(f *stackfile.Stack, cfg aws.Config) (*userpool.TestUsers, error) {
	pool, client := f.Outputs["UserPoolId"], f.Outputs["TestUsersClientId"]
	if pool == "" || client == "" {
		return nil, fmt.Errorf("the stack has no local issuer and no test users client (outputs UserPoolId, TestUsersClientId): " +
			"deploy it with EnableTestUsers=true so that the suite can sign its users in")
	}
	return userpool.NewTestUsers(cognitoidentityprovider.NewFromConfig(cfg), pool, client)
}

// functionTags are the build tags of the stack's functions: the suite's own
// build's choice of the SDK mend (internal/sdkhttp), so that
// `go test -tags sdkhttp_unmended ./e2e/` runs every SDK client without it.
func functionTags() []string {
	if sdkhttp.Unmended {
		return []string{"sdkhttp_unmended"}
	}
	return nil
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

var seq atomic.Int64

// id returns an identifier unique to this run.
func id(prefix string) string { return fmt.Sprintf("%s-%s-%d", prefix, runID, seq.Add(1)) }

// user is a caller of the HTTP API.
type user struct {
	sub, role, email string
	token            string
}

// newUser signs a user in with role ("" for a user in no group).
func newUser(t *testing.T, role string) user {
	t.Helper()
	var groups []string
	prefix := "stranger"
	if role != "" {
		groups, prefix = []string{role}, role
	}
	sub := id(prefix)
	u := user{sub: sub, role: role, email: sub + "@example.com"}
	if stack.issuer == nil {
		// A user of the stack's pool in the role's group, signed in: the
		// ID token carries its sub, address, groups and the client as
		// audience, as a browser's would.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var password string
		var err error
		u.sub, password, err = stack.users.Create(ctx, u.email, groups...)
		require.NoError(t, err)
		tok, err := stack.users.SignIn(ctx, u.email, password)
		require.NoError(t, err)
		u.token = tok.ID
		return u
	}
	tok, err := stack.issuer.Sign(issuer.Claims{
		Subject: sub, Audience: stack.file.JWTAudience, Email: u.email, Groups: groups,
	}, time.Hour)
	require.NoError(t, err)
	u.token = tok
	return u
}

// response is an HTTP answer with its JSON body decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// call sends a request to the HTTP API as u (no Authorization when u is the
// zero user). headers alternate name, value.
func call(t *testing.T, u user, method, path string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, stack.file.APIURL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	// A wait ends as soon as its condition holds, so a generous floor costs
	// a passing run nothing, while a loaded two-core CI machine can be many
	// times slower than the deadline a test was written with.
	within = patience.Within(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// sandbox talks to a sandbox's HTTP API.
func sandbox(t *testing.T, base, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "%s %s", method, path)
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// mailTo lists the messages the mail provider accepted for an address.
func mailTo(t *testing.T, addr string) []map[string]any {
	t.Helper()
	out := sandbox(t, stack.file.MailURL, http.MethodGet, "/v1/messages?to="+addr, nil)
	var msgs []map[string]any
	list, _ := out["messages"].([]any)
	for _, m := range list {
		msgs = append(msgs, m.(map[string]any))
	}
	return msgs
}

// setMailFaults switches the mail sandbox's fault mode for the rest of the
// test. Tests that change faults must not run in parallel with others.
func setMailFaults(t *testing.T, faults map[string]any) {
	t.Helper()
	sandbox(t, stack.file.MailURL, http.MethodPost, "/_sandbox/faults", faults)
	t.Cleanup(func() {
		sandbox(t, stack.file.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	})
}
