package sqsquery

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awsCLI runs an AWS CLI that speaks the SQS Query protocol against the front.
type awsCLI struct {
	path string
}

var (
	cliOnce    sync.Once
	cliFound   awsCLI
	cliMissing string
)

// queryCLI returns the AWS CLI to drive, or skips the test (fails it in CI)
// when there is none. The CLI is $AWS_CLI, or else the first "aws" on PATH
// that sends SQS calls in the Query protocol: newer CLIs speak JSON to SQS and
// would not exercise the translation at all, so each candidate is probed.
func queryCLI(t *testing.T) awsCLI {
	t.Helper()
	cliOnce.Do(func() { cliFound, cliMissing = findQueryCLI() })
	if cliFound.path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(cliMissing)
		}
		t.Skip(cliMissing)
	}
	t.Logf("driving %s", cliFound.path)
	return cliFound
}

func findQueryCLI() (awsCLI, string) {
	var candidates []string
	if p := os.Getenv("AWS_CLI"); p != "" {
		candidates = []string{p}
	} else {
		seen := map[string]bool{}
		for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
			p, err := exec.LookPath(filepath.Join(dir, "aws"))
			if err != nil || seen[p] {
				continue
			}
			seen[p] = true
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return awsCLI{}, "no AWS CLI found: set AWS_CLI or put aws on PATH (Debian: apt-get install awscli)"
	}
	var tried []string
	for _, p := range candidates {
		c := awsCLI{path: p}
		before := queryCalls.Load()
		_, stderr, err := c.exec(context.Background(), "sqs", "list-queues")
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s failed: %v: %s", p, err, stderr))
		case queryCalls.Load() == before:
			tried = append(tried, p+" speaks the JSON protocol to SQS")
		default:
			return c, ""
		}
	}
	return awsCLI{}, "no AWS CLI that speaks the SQS Query protocol (Debian 12's awscli does): " + strings.Join(tried, "; ")
}

// exec runs the CLI with a clean AWS environment.
func (c awsCLI) exec(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	args = append([]string{"--endpoint-url", frontURL, "--output", "json"}, args...)
	cmd := exec.CommandContext(ctx, c.path, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"HOME="+cliHome,
		"AWS_CONFIG_FILE="+filepath.Join(cliHome, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(cliHome, "credentials"),
		"AWS_ACCESS_KEY_ID=x",
		"AWS_SECRET_ACCESS_KEY=x",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_MAX_ATTEMPTS=1",
		"AWS_PAGER=",
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// ok runs a command that must succeed and decodes its JSON output into out
// (nil for commands that print nothing).
func (c awsCLI) ok(t *testing.T, out any, args ...string) {
	t.Helper()
	stdout, stderr, err := c.exec(context.Background(), args...)
	require.NoError(t, err, "aws %s: %s", strings.Join(args, " "), stderr)
	if out != nil {
		require.NoError(t, json.Unmarshal([]byte(stdout), out), "aws %s printed %q", strings.Join(args, " "), stdout)
	}
}

// fails runs a command that must fail and returns what it printed on stderr.
func (c awsCLI) fails(t *testing.T, args ...string) string {
	t.Helper()
	_, stderr, err := c.exec(context.Background(), args...)
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "aws %s: want a non-zero exit, got %v", strings.Join(args, " "), err)
	require.NotZero(t, exitErr.ExitCode())
	return stderr
}

type cliQueueURL struct {
	QueueUrl string
}

type cliMessage struct {
	MessageId         string
	ReceiptHandle     string
	MD5OfBody         string
	Body              string
	Attributes        map[string]string
	MessageAttributes map[string]struct {
		DataType    string
		StringValue string
		BinaryValue string
	}
}

type cliMessages struct {
	Messages []cliMessage
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestCLIQueueLifecycle drives the queue operations: create with attributes
// and tags, list, look up, read and change attributes, tags, delete.
func TestCLIQueueLifecycle(t *testing.T) {
	t.Parallel()
	aws := queryCLI(t)
	name := uniqueName(t)

	var created cliQueueURL
	aws.ok(t, &created, "sqs", "create-queue", "--queue-name", name,
		"--attributes", "VisibilityTimeout=7,DelaySeconds=1", "--tags", "team=club,env=local")
	require.True(t, strings.HasSuffix(created.QueueUrl, "/000000000000/"+name), created.QueueUrl)

	var listed struct{ QueueUrls []string }
	aws.ok(t, &listed, "sqs", "list-queues", "--queue-name-prefix", name)
	require.Equal(t, []string{created.QueueUrl}, listed.QueueUrls)

	var found cliQueueURL
	aws.ok(t, &found, "sqs", "get-queue-url", "--queue-name", name)
	require.Equal(t, created.QueueUrl, found.QueueUrl)

	var attrs struct{ Attributes map[string]string }
	aws.ok(t, &attrs, "sqs", "get-queue-attributes", "--queue-url", created.QueueUrl, "--attribute-names", "All")
	require.Equal(t, "7", attrs.Attributes["VisibilityTimeout"])
	require.Equal(t, "1", attrs.Attributes["DelaySeconds"])
	require.Equal(t, "arn:aws:sqs:us-east-1:000000000000:"+name, attrs.Attributes["QueueArn"])

	aws.ok(t, nil, "sqs", "set-queue-attributes", "--queue-url", created.QueueUrl,
		"--attributes", "VisibilityTimeout=9")
	var changed struct{ Attributes map[string]string }
	aws.ok(t, &changed, "sqs", "get-queue-attributes", "--queue-url", created.QueueUrl,
		"--attribute-names", "VisibilityTimeout", "DelaySeconds")
	require.Equal(t, map[string]string{"VisibilityTimeout": "9", "DelaySeconds": "1"}, changed.Attributes)

	var tags struct{ Tags map[string]string }
	aws.ok(t, &tags, "sqs", "list-queue-tags", "--queue-url", created.QueueUrl)
	require.Equal(t, map[string]string{"team": "club", "env": "local"}, tags.Tags)
	aws.ok(t, nil, "sqs", "tag-queue", "--queue-url", created.QueueUrl, "--tags", "owner=ops")
	aws.ok(t, nil, "sqs", "untag-queue", "--queue-url", created.QueueUrl, "--tag-keys", "env")
	var retagged struct{ Tags map[string]string } // json.Unmarshal merges into a used map
	aws.ok(t, &retagged, "sqs", "list-queue-tags", "--queue-url", created.QueueUrl)
	require.Equal(t, map[string]string{"team": "club", "owner": "ops"}, retagged.Tags)

	aws.ok(t, nil, "sqs", "delete-queue", "--queue-url", created.QueueUrl)
	stderr := aws.fails(t, "sqs", "get-queue-url", "--queue-name", name)
	require.Contains(t, stderr, "AWS.SimpleQueueService.NonExistentQueue")
}

// TestCLIMessages drives the message operations and checks that bodies,
// system attributes and message attributes survive both translations.
func TestCLIMessages(t *testing.T) {
	t.Parallel()
	aws := queryCLI(t)
	queue := createQueueSDK(t, map[string]string{"VisibilityTimeout": "30"})

	// Characters that XML must escape, a newline, a carriage return and
	// non-ASCII text must come back byte for byte.
	body := "<order id=\"1\">fish & chips</order>\r\nprix: 5 €"
	var sent struct{ MessageId, MD5OfMessageBody string }
	aws.ok(t, &sent, "sqs", "send-message", "--queue-url", queue, "--message-body", body,
		"--message-attributes", `{"kind":{"DataType":"String","StringValue":"order"},`+
			`"qty":{"DataType":"Number","StringValue":"3"},`+
			`"blob":{"DataType":"Binary","BinaryValue":"AAEC/w=="}}`)
	require.NotEmpty(t, sent.MessageId)
	require.Equal(t, md5Hex(body), sent.MD5OfMessageBody)

	var batch struct {
		Successful []struct{ Id, MessageId, MD5OfMessageBody string }
		Failed     []struct{ Id, Code string }
	}
	aws.ok(t, &batch, "sqs", "send-message-batch", "--queue-url", queue, "--entries",
		`[{"Id":"a","MessageBody":"first","MessageAttributes":{"n":{"DataType":"String","StringValue":"1"}}},`+
			`{"Id":"b","MessageBody":"second"}]`)
	require.Empty(t, batch.Failed)
	require.Len(t, batch.Successful, 2)
	ids := map[string]string{}
	for _, s := range batch.Successful {
		ids[s.Id] = s.MessageId
		require.NotEmpty(t, s.MessageId)
	}
	require.Equal(t, md5Hex("first"), batch.Successful[0].MD5OfMessageBody)

	var got cliMessages
	aws.ok(t, &got, "sqs", "receive-message", "--queue-url", queue, "--max-number-of-messages", "10",
		"--attribute-names", "All", "--message-attribute-names", "All", "--wait-time-seconds", "1")
	require.Len(t, got.Messages, 3)
	byID := map[string]cliMessage{}
	for _, m := range got.Messages {
		byID[m.MessageId] = m
		require.Equal(t, md5Hex(m.Body), m.MD5OfBody)
		require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"])
		require.NotEmpty(t, m.Attributes["SentTimestamp"])
	}
	first := byID[sent.MessageId]
	require.Equal(t, body, first.Body)
	require.Equal(t, "order", first.MessageAttributes["kind"].StringValue)
	require.Equal(t, "String", first.MessageAttributes["kind"].DataType)
	require.Equal(t, "3", first.MessageAttributes["qty"].StringValue)
	require.Equal(t, "Number", first.MessageAttributes["qty"].DataType)
	require.Equal(t, "Binary", first.MessageAttributes["blob"].DataType)
	blob, err := base64.StdEncoding.DecodeString(first.MessageAttributes["blob"].BinaryValue)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 1, 2, 255}, blob)
	require.Equal(t, "first", byID[ids["a"]].Body)
	require.Equal(t, "1", byID[ids["a"]].MessageAttributes["n"].StringValue)
	require.Equal(t, "second", byID[ids["b"]].Body)

	// Make the first message visible again: it comes back, received twice.
	aws.ok(t, nil, "sqs", "change-message-visibility", "--queue-url", queue,
		"--receipt-handle", first.ReceiptHandle, "--visibility-timeout", "0")
	var again cliMessages
	aws.ok(t, &again, "sqs", "receive-message", "--queue-url", queue,
		"--attribute-names", "ApproximateReceiveCount", "--wait-time-seconds", "2")
	require.Len(t, again.Messages, 1)
	require.Equal(t, sent.MessageId, again.Messages[0].MessageId)
	require.Equal(t, "2", again.Messages[0].Attributes["ApproximateReceiveCount"])

	aws.ok(t, nil, "sqs", "delete-message", "--queue-url", queue,
		"--receipt-handle", again.Messages[0].ReceiptHandle)
	var deleted struct {
		Successful []struct{ Id string }
		Failed     []struct{ Id, Code string }
	}
	aws.ok(t, &deleted, "sqs", "delete-message-batch", "--queue-url", queue, "--entries",
		fmt.Sprintf(`[{"Id":"a","ReceiptHandle":%q},{"Id":"gone","ReceiptHandle":"no-such-handle"}]`,
			byID[ids["a"]].ReceiptHandle))
	require.Equal(t, []struct{ Id string }{{Id: "a"}}, deleted.Successful)
	require.Len(t, deleted.Failed, 1)
	assert.Equal(t, "gone", deleted.Failed[0].Id)
	assert.Equal(t, "ReceiptHandleIsInvalid", deleted.Failed[0].Code)

	var attrs struct{ Attributes map[string]string }
	aws.ok(t, &attrs, "sqs", "get-queue-attributes", "--queue-url", queue,
		"--attribute-names", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
	require.Equal(t, "1", attrs.Attributes["ApproximateNumberOfMessagesNotVisible"]) // "second"

	aws.ok(t, nil, "sqs", "purge-queue", "--queue-url", queue)
	var purged struct{ Attributes map[string]string }
	aws.ok(t, &purged, "sqs", "get-queue-attributes", "--queue-url", queue, "--attribute-names", "All")
	require.Equal(t, "0", purged.Attributes["ApproximateNumberOfMessages"])
	require.Equal(t, "0", purged.Attributes["ApproximateNumberOfMessagesNotVisible"])
}

// TestCLIErrors checks that errors reach the CLI with the Query codes, and
// that operations the emulator lacks stay errors.
func TestCLIErrors(t *testing.T) {
	t.Parallel()
	aws := queryCLI(t)
	missing := "http://localhost:4566/000000000000/" + uniqueName(t)

	stderr := aws.fails(t, "sqs", "send-message", "--queue-url", missing, "--message-body", "x")
	require.Contains(t, stderr, "(AWS.SimpleQueueService.NonExistentQueue)")
	require.Contains(t, stderr, "SendMessage")

	queue := createQueueSDK(t, nil)
	stderr = aws.fails(t, "sqs", "change-message-visibility", "--queue-url", queue,
		"--receipt-handle", "no-such-handle", "--visibility-timeout", "5")
	require.Contains(t, stderr, "(ReceiptHandleIsInvalid)")

	stderr = aws.fails(t, "sqs", "list-dead-letter-source-queues", "--queue-url", queue)
	require.Contains(t, stderr, "(InvalidAction)")
	require.Contains(t, stderr, "ListDeadLetterSourceQueues")
}
