package reliability

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
)

// outboxRowOf returns the event id of the outbox row of type typ about
// aggregateID, once it exists.
func outboxRowOf(t *testing.T, aggregateID, typ string) string {
	t.Helper()
	table := stack.file.Tables["OutboxTable"]
	require.NotEmpty(t, table, "the stack names its OutboxTable")
	var eventID string
	eventually(t, 30*time.Second, typ+" row for "+aggregateID, func() bool {
		out, err := stack.db.Scan(context.Background(), &dynamodb.ScanInput{
			TableName:                aws.String(table),
			FilterExpression:         aws.String("aggregate_id = :a AND #type = :t"),
			ExpressionAttributeNames: map[string]string{"#type": "type"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":a": &types.AttributeValueMemberS{Value: aggregateID}, ":t": &types.AttributeValueMemberS{Value: typ},
			},
			ConsistentRead: aws.Bool(true),
		})
		require.NoError(t, err)
		require.LessOrEqual(t, len(out.Items), 1, "one %s row for %s", typ, aggregateID)
		if len(out.Items) == 0 {
			return false
		}
		id, _ := out.Items[0]["event_id"].(*types.AttributeValueMemberS)
		require.NotNil(t, id)
		eventID = id.Value
		return true
	})
	return eventID
}

// TestLatePaymentRefundStartedBySweeper: a payment arrives after the hold
// expired, and the relay cannot start the refund execution (every start it
// tries fails at relay.before_publish). The refund intent and its
// refund.requested row were committed together, so the row stays pending
// and the outbox sweeper starts <id>-refund from it: the provider holds
// exactly one refund, and no seat moves.
func TestLatePaymentRefundStartedBySweeper(t *testing.T) {
	control(t, http.MethodPost, stack.file.PaymentURL+"/_sandbox/faults", map[string]any{"mode": "none"}, nil)
	// Its sale expired during TestExercise2, bought with that test's own
	// (or, run alone, here): a 20 s hold, so that the first payment request
	// goes out before the cutoff (a tenth before the hold's end), also on a
	// busy machine.
	s, ok := takeExpired(t.Name())
	if !ok {
		s = buySeats(t, paidIntensive(t, 1, 20))[0]
	}
	intensiveID := s.intensiveID
	awaitStatus(t, s.purchaseID, "expired", 90*time.Second)
	require.Equal(t, "SUCCEEDED", ended(t, s.purchaseID).status)
	before := seatsOf(t, intensiveID)

	require.Zero(t, queueDepth(t, "RelayFailuresQueue"), "no failure record before the test")
	relayFn, sweeperFn := function(t, "RelayFunction"), function(t, "OutboxSweeperFunction")
	armFaults(t, fault.Plan{Seed: stack.seed, Rules: []fault.Rule{
		{Point: fault.RelayBeforePublish, Function: relayFn, Action: fault.Fail},
	}})
	settle(t, s.paymentID, "succeed")
	p := awaitStatus(t, s.purchaseID, "refund_pending", 30*time.Second)
	require.True(t, p.LatePayment)
	eventID := outboxRowOf(t, s.purchaseID, "refund.requested")

	name := s.purchaseID + "-refund"
	client := sfn.NewFromConfig(stack.aws)
	eventually(t, 90*time.Second, "the sweeper starts "+name, func() bool {
		_, err := client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN(t, name))})
		var missing *sfntypes.ExecutionDoesNotExist
		if errors.As(err, &missing) {
			return false
		}
		require.NoError(t, err)
		return true
	})
	// The sweeper reports passing its after-publish point once the start
	// has returned, so the execution can be seen a moment before that.
	var st fault.State
	eventually(t, 30*time.Second, "the sweeper reports that it started "+name, func() bool {
		st = faultsOf(t, eventID)
		return st.PassCount(fault.RelayAfterPublish, sweeperFn) >= 1
	})
	require.GreaterOrEqual(t, st.PassCount(fault.RelayBeforePublish, relayFn), int64(1), "the relay tried and failed")
	require.Zero(t, st.PassCount(fault.RelayAfterPublish, relayFn), "the relay never started it")

	p = awaitStatus(t, s.purchaseID, "refunded", 90*time.Second)
	require.Equal(t, "SUCCEEDED", ended(t, name).status)
	refundedOnce(t, p)
	require.Equal(t, before, seatsOf(t, intensiveID), "a late payment changes no seat")

	// The stream may have given up on the row before the sweeper took it:
	// its failure record is moot now (the row is published), and later
	// tests expect the dead-letter queues empty.
	control(t, http.MethodDelete, stack.file.Endpoint+"/_club/faults", nil, nil)
	quiet(t, 60*time.Second)
	t.Logf("relay failure records of the row: %d", drain(t, "RelayFailuresQueue"))
}

// drain deletes every message of a queue and returns how many there were.
func drain(t *testing.T, queue string) int {
	t.Helper()
	n := 0
	for queueDepth(t, queue) > 0 {
		got, err := stack.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(stack.file.Queues[queue]), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		require.NoError(t, err)
		for _, m := range got.Messages {
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{
				QueueUrl: aws.String(stack.file.Queues[queue]), ReceiptHandle: m.ReceiptHandle,
			})
			require.NoError(t, err)
			n++
		}
	}
	return n
}
