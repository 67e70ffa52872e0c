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
	// same. Only that many attempts may be missing, and the exporter may
	// give up at a receive that many later (none with the adversary off).
	// A delete of the job SQS does not carry out (sqs.redeliver) brings it
	// back once more after the exporter gave up, and that delivery is
	// dead-lettered too; so may a batch invoked again (below).
	before := stack.cloud.Adversary().Counts
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

	letters := exportDeadLetters(t, operationID)
	after := stack.cloud.Adversary().Counts
	lost := after["any.lost_answer"] - before["any.lost_answer"]
	redelivered := after["sqs.redeliver"] - before["sqs.redeliver"]
	again := after["lambda.esm_redeliver"] - before["lambda.esm_redeliver"]
	require.LessOrEqual(t, int64(len(letters)), 1+redelivered+again, "one dead letter per delivery after the exporter gave up")
	for _, letter := range letters {
		require.Equal(t, "retries_exhausted", attr(letter, "dlq_code"))
		require.Contains(t, attr(letter, "dlq_reason"), "fault injected at exporter.before_put")
		require.Equal(t, stack.file.Queues["ExportsQueue"], attr(letter, "source_queue"))
		got, err := strconv.Atoi(attr(letter, "receive_count"))
		require.NoError(t, err, attr(letter, "receive_count"))
		require.GreaterOrEqual(t, got, exportsMaxReceiveCount, "after the queue's attempts")
		require.LessOrEqual(t, int64(got), int64(exportsMaxReceiveCount)+lost+redelivered+again,
			"given up at the exporter's MAX_RECEIVE_COUNT, later only by the receives the adversary lost or brought back (%v to %v)", before, after)
	}

	st := faultsOf(t, operationID)
	attempts := st.PassCount(fault.ExporterBeforePut, fn)
	require.GreaterOrEqual(t, attempts, int64(exportsMaxReceiveCount)-lost, "one attempt per receive but for receives whose answer was lost")
	// A batch the event source mapping invokes again (the adversary's
	// lambda.esm_redeliver, which AWS allows: "duplicate processing of
	// records can occur") runs its attempt again, and the second run's
	// settling of the message can bring it back apart from the first's:
	// then attempts exceed receives. Only the bound with no batch invoked
	// again is exact.
	if after["lambda.esm_redeliver"] == before["lambda.esm_redeliver"] {
		require.LessOrEqual(t, attempts, int64(exportsMaxReceiveCount), "at most one attempt per receive")
	}
	require.EqualValues(t, attempts, st.FiredCount(fault.ExporterBeforePut, fault.Fail))
	require.Empty(t, exportObjects(t, operationID), "no file")
}

// exportDeadLetters waits until the pipeline has handled every delivery of
// an operation's job, then returns the job's dead letters in the exports DLQ
// (at least one), and removes them once the test has read them. Letters of
// other jobs are left as they were.
func exportDeadLetters(t *testing.T, operationID string) []sqstypes.Message {
	t.Helper()
	quiet(t, 2*time.Minute)
	queue := aws.String(stack.file.Queues["ExportsDLQ"])
	received := map[string]sqstypes.Message{}
	eventually(t, 30*time.Second, "every letter in ExportsDLQ received", func() bool {
		out, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: queue, MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			received[aws.ToString(m.MessageId)] = m
		}
		return len(received) > 0 && len(received) >= queueDepth(t, "ExportsDLQ")
	})
	var ours []sqstypes.Message
	for _, m := range received {
		var env struct {
			AggregateID string `json:"aggregate_id"`
		}
		if json.Unmarshal([]byte(aws.ToString(m.Body)), &env) == nil && env.AggregateID == operationID {
			ours = append(ours, m)
			continue
		}
		_, err := stack.sqs.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: queue, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, ours, "the job is in ExportsDLQ")
	t.Cleanup(func() {
		for _, m := range ours {
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: queue, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	})
	return ours
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
