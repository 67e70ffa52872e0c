package api_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAWSCLI drives the endpoint with the standard AWS CLI (`aws
// stepfunctions ...`): $AWS_CLI, else aws on PATH. CI installs it and fails
// without it; elsewhere the test is skipped where the CLI is not installed.
func TestAWSCLI(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("AWS_CLI")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("aws"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("the AWS CLI is required in CI (.ci/run installs it)")
			}
			t.Skip("the AWS CLI is not installed")
		}
	}
	f := setup(t)
	home := t.TempDir()
	aws := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"stepfunctions", "--endpoint-url", f.url, "--output", "json"}, args...)...)
		// A clean, fixed configuration: no profile or credentials of the
		// machine may leak in.
		cmd.Env = []string{
			"HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1",
			"AWS_CONFIG_FILE=" + filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
			"AWS_PAGER=", "AWS_MAX_ATTEMPTS=1",
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "aws %v: %s", args, out)
		if len(out) == 0 {
			return nil
		}
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v), "%s", out)
		return v
	}

	created := aws("create-state-machine", "--name", "cli", "--definition", callbackDefinition,
		"--role-arn", "arn:aws:iam::000000000000:role/sfn")
	machine := created["stateMachineArn"].(string)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:cli", machine)

	started := aws("start-execution", "--state-machine-arn", machine, "--name", "run-1", "--input", `{"purchase":"p-9"}`)
	execution := started["executionArn"].(string)

	aws("send-task-success", "--task-token", f.token(t), "--task-output", `{"ok":true}`)
	f.waitStatus(t, execution)

	desc := aws("describe-execution", "--execution-arn", execution)
	require.Equal(t, "SUCCEEDED", desc["status"])
	require.JSONEq(t, `{"purchase":"p-9","paid":{"ok":true}}`, desc["output"].(string))

	history := aws("get-execution-history", "--execution-arn", execution)
	events := history["events"].([]any)
	require.Len(t, events, 10)
	require.Equal(t, "ExecutionStarted", events[0].(map[string]any)["type"])
	require.Equal(t, "ExecutionSucceeded", events[9].(map[string]any)["type"])

	list := aws("list-executions", "--state-machine-arn", machine)
	require.Len(t, list["executions"], 1)
	machines := aws("list-state-machines")
	require.Len(t, machines["stateMachines"], 1)
}
