package localcloud_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// awsCLI returns the AWS CLI to drive, failing under CI (which installs it)
// and skipping elsewhere when it is not installed.
func awsCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AWS_CLI"); p != "" {
		return p
	}
	p, err := exec.LookPath("aws")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the AWS CLI is required in CI (.ci/run installs it)")
		}
		t.Skip("the AWS CLI is not installed")
	}
	return p
}

func TestAWSCLIWorksAgainstTheEndpoint(t *testing.T) {
	cli := awsCLI(t)
	run := func(args ...string) map[string]any {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"--endpoint-url", env.stack.Endpoint, "--output", "json"}, args...)...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
			"AWS_DEFAULT_REGION=us-east-1", "AWS_PAGER=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		require.NoError(t, err, "aws %s: %s", strings.Join(args, " "), stderr)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v), string(out))
		return v
	}
	tables := run("dynamodb", "list-tables")["TableNames"]
	require.ElementsMatch(t, []any{env.stack.Tables["SeenTable"], env.stack.Tables["SourceTable"]}, tables)

	var queues []string
	for _, q := range run("sqs", "list-queues")["QueueUrls"].([]any) {
		queues = append(queues, q.(string)[strings.LastIndex(q.(string), "/")+1:])
	}
	for _, want := range []string{"club-WorkQueue", "club-WorkDLQ", "club-StreamFailures"} {
		require.Contains(t, queues, want)
	}

	mappings := run("lambda", "list-event-source-mappings")["EventSourceMappings"].([]any)
	require.Len(t, mappings, 2, "the SQS and the stream mapping of the template")
}
