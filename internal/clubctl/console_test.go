package clubctl

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/console"
	"github.com/clubdev/club/internal/ops/cwmetric"
	"github.com/clubdev/club/internal/ops/queues"
)

// On AWS the console's charts start with the hour CloudWatch kept: every
// queue's depth, in flight, age and DLQ depth, and each function's
// iterator age, one sample per timestamp.
func TestConsolePastHourFromCloudWatch(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, false, nil)
	notifications, dlq := e.stack.Queues["NotificationsQueue"], e.stack.Queues["NotificationsDLQ"]
	metrics := cloudWatchMetrics{queues.NameOf(notifications): 42, queues.NameOf(dlq): 3, "club-Relay": 1500}
	g := newGlobals(io.Discard, io.Discard)
	g.StackFile = e.stackFile
	e.at(0, func(g *Globals) { g.clients.cloudWatch = func(aws.Config) cwmetric.CloudWatch { return metrics } })(g)
	tg, err := g.loadTarget(context.Background())
	require.NoError(t, err)

	past, err := (&consoleSource{g: g, t: tg}).PastHour(context.Background())
	require.NoError(t, err)
	require.Len(t, past, 1, "the fake has one timestamp")
	p := past[0]
	require.Equal(t, "cloudwatch", p.Source)
	n := p.Queues["NotificationsQueue"]
	require.EqualValues(t, 42, n.Visible) // the fake answers each metric of a queue alike
	require.EqualValues(t, 42, n.InFlight)
	require.InDelta(t, 42, *n.Age, 0)
	require.EqualValues(t, 3, *n.DLQ)
	require.InDelta(t, 1.5, *p.Streams["club-Relay"].Age, 1e-9, "milliseconds to seconds")
	require.NotContains(t, p.Streams, "club-Notifier", "no datapoint, no sample")

	// The local cloud publishes no metrics: nothing to ask.
	tg.stack.IssuerKeyFile = "issuer-key.pem"
	past, err = (&consoleSource{g: g, t: tg}).PastHour(context.Background())
	require.NoError(t, err)
	require.Empty(t, past)
}

// The console's capacity is clubctl capacity --simulate --json itself: the
// same output for good numbers, the command's own usage error for bad ones.
func TestConsoleCapacityIsTheCommand(t *testing.T) {
	t.Parallel()
	s := &consoleSource{g: newGlobals(io.Discard, io.Discard)}
	got, err := s.Capacity(context.Background(), url.Values{"backlog": {"6000"}, "arrival": {"80"}, "rate": {"100"}, "deadline": {"10s"}})
	require.NoError(t, err)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	var out capacityOutput
	require.NoError(t, json.Unmarshal(raw, &out))
	require.True(t, out.Drains)
	require.InDelta(t, 300, *out.DrainSeconds, 1e-9)
	require.False(t, *out.Holds, "300 s is not 10 s")
	require.NotNil(t, out.Simulation)
	require.NotEmpty(t, out.Simulation.Curve)

	_, err = s.Capacity(context.Background(), url.Values{"backlog": {"lots"}, "rate": {"100"}})
	var ce *console.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, console.CodeInvalidRequest, ce.Code)
	require.Contains(t, ce.Error(), "backlog")
}
