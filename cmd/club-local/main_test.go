package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
	"github.com/clubdev/club/localcloud/template"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

// TestRunsTheTemplateAndStopsCleanly is what `make run` does, on the real
// template: the binary builds and provisions everything, answers /healthz,
// writes the stack file, and on Ctrl-C stops leaving no process behind.
func TestRunsTheTemplateAndStopsCleanly(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "club-local")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	state := t.TempDir()
	api := freeAddr(t)
	var stderr syncBuffer
	cmd := exec.Command(bin, "--state-dir", state, "--endpoint", freeAddr(t), "--api", api,
		"--mail", freeAddr(t), "--payment", freeAddr(t), "--quiet")
	cmd.Dir = root
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// Compiling nine functions on a cold cache, next to other test packages
	// doing the same, can take minutes; being healthy once they are built
	// must not. Two deadlines, one for each.
	waitUntil(t, exited, &stderr, 20*time.Minute, "functions built", func() bool {
		return strings.Contains(stderr.String(), "functions built")
	})
	waitUntil(t, exited, &stderr, 3*time.Minute, "healthy after the build", func() bool {
		resp, err := http.Get("http://" + api + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	st, err := stackfile.Load(filepath.Join(state, "stack.json"))
	require.NoError(t, err)
	require.Equal(t, "http://"+api, st.APIURL)
	for _, logical := range []string{"ClubTable", "OutboxTable"} {
		require.NotEmpty(t, st.Tables[logical], logical)
	}
	for _, logical := range []string{"NotificationsQueue", "NotificationsDLQ", "AnalyticsQueue", "RosterQueue"} {
		require.NotEmpty(t, st.Queues[logical], logical)
	}
	require.NotEmpty(t, st.Topics["ClubEventsTopic"])
	// Parameter values travel in the outputs, as in a stack description;
	// secrets do not. The webhook secret is in SSM, under the name the
	// template's parameter gives, where the API read it to start.
	require.Equal(t, "7", st.Outputs["InboxRetentionDays"])
	secret, err := os.ReadFile(filepath.Join(state, "webhook-secret"))
	require.NoError(t, err)
	for name, v := range st.Outputs {
		require.NotContains(t, v, strings.TrimSpace(string(secret)), "output %s", name)
	}
	require.Equal(t, "/club/payment-webhook-secret", st.Outputs["PaymentWebhookSecretParameter"])
	param, err := ssm.NewFromConfig(localcloud.AWSConfig(st.Endpoint)).GetParameter(context.Background(), &ssm.GetParameterInput{
		Name: aws.String(st.Outputs["PaymentWebhookSecretParameter"]), WithDecryption: aws.Bool(true),
	})
	require.NoError(t, err)
	require.Equal(t, ssmtypes.ParameterTypeSecureString, param.Parameter.Type)
	require.Equal(t, strings.TrimSpace(string(secret)), aws.ToString(param.Parameter.Value))
	tmpl, err := template.Load(filepath.Join(root, "infra", "template.yaml"), template.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, tmpl.Functions)
	require.Len(t, st.Functions, len(tmpl.Functions), "every function of the template runs")
	require.NotEmpty(t, st.StateMachines["PurchaseStateMachine"])
	require.Equal(t, st.StateMachines["PurchaseStateMachine"], st.Outputs["PurchaseStateMachineArn"])

	children := descendants(cmd.Process.Pid)
	require.NotEmpty(t, children, "functions run as child processes")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, stderr.String())
	case <-time.After(patience.Wait()):
		t.Fatal("club-local did not stop after Ctrl-C")
	}
	for _, pid := range children {
		require.False(t, alive(pid), "function process %d survived", pid)
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("Transform: AWS::Serverless-2016-10-31\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      Colour: red\n"), 0o600))
	var stderr bytes.Buffer
	code := run([]string{"--validate", "--template", bad}, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), `"Colour"`)

	stderr.Reset()
	require.Equal(t, 0, run([]string{"--validate"}, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "functions")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"--no-such-flag"}, &stderr))
}

// descendants lists the processes below pid (Linux /proc).
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q != 0; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return len(f) > 0 && f[0] != "Z"
}

// waitUntil polls cond until it holds, failing with what it waited for when
// the deadline passes or the process exits first.
func waitUntil(t *testing.T, exited <-chan error, stderr *syncBuffer, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout = patience.Within(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("club-local exited while waiting for %s: %v\n%s", what, err, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "waited %s for %s:\n%s", timeout, what, stderr.String())
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer the process's output goroutine and the test
// may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
