package relay_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/relay"
)

func TestRoutingFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"EVENTS_TOPIC_ARN":           "arn:aws:sns:us-east-1:000000000000:club-events",
		"PURCHASE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		"EXPORTS_QUEUE_URL":          "http://127.0.0.1:4566/000000000000/club-exports",
	}
	getenv := func(k string) string { return env[k] }
	r, err := relay.RoutingFromEnv(getenv)
	require.NoError(t, err)
	require.Equal(t, relay.Routing{
		TopicARN:                "arn:aws:sns:us-east-1:000000000000:club-events",
		PurchaseStateMachineARN: "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		ExportsQueueURL:         "http://127.0.0.1:4566/000000000000/club-exports",
	}, r, "batching is off by default")

	env["SNS_PUBLISH_BATCH"] = "true"
	r, err = relay.RoutingFromEnv(getenv)
	require.NoError(t, err)
	require.True(t, r.PublishBatch)

	_, err = relay.RoutingFromEnv(func(k string) string { return map[string]string{"SNS_PUBLISH_BATCH": "sometimes"}[k] })
	for _, want := range []string{"EVENTS_TOPIC_ARN is required", "PURCHASE_STATE_MACHINE_ARN is required", "EXPORTS_QUEUE_URL is required", `SNS_PUBLISH_BATCH: "sometimes" is not a boolean`} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}
