package reliability

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
)

// exportsMaxReceiveCount is the exporter's MAX_RECEIVE_COUNT in
// infra/template.yaml: the receive at which it gives up (two below the
// queue's maxReceiveCount).
const exportsMaxReceiveCount = 5

// TestExportThatAlwaysFails: every attempt of an export fails just before
// its file is written (exporter.before_put). After the queue's attempts the
// operation is failed with a reason the API shows its creator, the job is
// in the exports DLQ with the same reason, and no file exists.
func TestExportThatAlwaysFails(t *testing.T) {
	quiet(t, 90*time.Second)
	fn := function(t, "ExporterFunction")
	armFaults(t, fault.Plan{Seed: stack.seed, Rules: []fault.Rule{{Point: fault.ExporterBeforePut, Function: fn, Action: fault.Fail}}})

	// A receive whose answer was lost (the adversary's any.lost_answer)
	// counts as a receive the exporter never saw: SQS counts it all the
	// same. Only that many attempts may be missing (none with it off).
	lostBefore := stack.cloud.Adversary().Counts["any.lost_answer"]
	classID, teacher := newClass(t, 5)
	r := call(t, teacher, http.MethodPost, "/classes/"+classID+"/exports", nil)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "pending", r.str("status"))
	operationID := r.str("operation_id")

	var op response
	eventually(t, 2*time.Minute, "the export has failed", func() bool {
		op = call(t, teacher, http.MethodGet, "/operations/"+operationID, nil)
		require.Equal(t, http.StatusOK, op.status, string(op.raw))
		require.NotEqual(t, "succeeded", op.str("status"), "an export whose every write fails cannot succeed")
		return op.str("status") == "failed"
	})
	failure, _ := op.body["error"].(map[string]any)
	require.Equal(t, "retries_exhausted", failure["code"], string(op.raw))
	require.Contains(t, failure["message"], "fault injected at exporter.before_put", "the reason, for the teacher")
	require.Nil(t, op.body["result"])
	var statuses []string
	for _, h := range op.body["history"].([]any) {
		statuses = append(statuses, h.(map[string]any)["status"].(string))
	}
	require.Equal(t, []string{"pending", "running", "failed"}, statuses)

	letter := exportDeadLetter(t, operationID)
	require.Equal(t, "retries_exhausted", attr(letter, "dlq_code"))
	require.Contains(t, attr(letter, "dlq_reason"), "fault injected at exporter.before_put")
	require.Equal(t, strconv.Itoa(exportsMaxReceiveCount), attr(letter, "receive_count"), "after the queue's attempts")
	require.Equal(t, stack.file.Queues["ExportsQueue"], attr(letter, "source_queue"))

	st := faultsOf(t, operationID)
	lost := stack.cloud.Adversary().Counts["any.lost_answer"] - lostBefore
	attempts := st.PassCount(fault.ExporterBeforePut, fn)
	require.LessOrEqual(t, attempts, int64(exportsMaxReceiveCount), "at most one attempt per receive")
	require.GreaterOrEqual(t, attempts, int64(exportsMaxReceiveCount)-lost, "one attempt per receive but for receives whose answer was lost")
	require.EqualValues(t, attempts, st.FiredCount(fault.ExporterBeforePut, fault.Fail))
	require.Empty(t, exportObjects(t, operationID), "no file")
}

// exportDeadLetter waits for the dead letter of an operation's job in the
// exports DLQ, and removes it once the test has read it.
func exportDeadLetter(t *testing.T, operationID string) sqstypes.Message {
	t.Helper()
	var found *sqstypes.Message
	eventually(t, 30*time.Second, "the job is in ExportsDLQ", func() bool {
		out, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(stack.file.Queues["ExportsDLQ"]), MaxNumberOfMessages: 10, VisibilityTimeout: 30,
			MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			var env struct {
				AggregateID string `json:"aggregate_id"`
			}
			if json.Unmarshal([]byte(aws.ToString(m.Body)), &env) == nil && env.AggregateID == operationID {
				found = &m
			}
		}
		return found != nil
	})
	t.Cleanup(func() {
		_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{
			QueueUrl: aws.String(stack.file.Queues["ExportsDLQ"]), ReceiptHandle: found.ReceiptHandle,
		})
		require.NoError(t, err)
	})
	return *found
}

// exportObjects lists the exports bucket's objects of an operation.
func exportObjects(t *testing.T, operationID string) []string {
	t.Helper()
	client := s3.NewFromConfig(stack.aws, func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
		Bucket: aws.String(stack.file.Buckets["ExportsBucket"]), Prefix: aws.String("exports/" + operationID),
	})
	require.NoError(t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
