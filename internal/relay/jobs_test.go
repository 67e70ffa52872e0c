package relay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
)

// exportRow is the outbox row of a new export, as the operation service
// writes it.
func exportRow(t *testing.T, operationID string) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), t0, events.ExportRequested{
		OperationID: operationID, Kind: events.ExportKindRosterExport, ClassID: "c-1", RequestedBy: "t-1",
	})
	require.NoError(t, err)
	r, err := outbox.NewRow(env, t0)
	require.NoError(t, err)
	return r
}

// TestRelaySendsJobsToTheirQueue relays, in one batch, an event and two
// export jobs through the real SQS client: the jobs arrive in the exports
// queue as the envelope byte for byte with the type and event_id
// attributes, the event goes to the topic, and every row is marked.
func TestRelaySendsJobsToTheirQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("relay-jobs-%d", resourceSeq.Add(1)))})
	require.NoError(t, err)
	jobs, err := relay.NewJobSender(sqsClient, relay.JobQueues{events.TypeExportRequested: aws.ToString(q.QueueUrl)})
	require.NoError(t, err)
	w := newWorld(t)
	evs := w.enroll(1, time.Second)
	rows := []outbox.Row{exportRow(t, "op-1"), evs[0], exportRow(t, "op-2")}
	topic, marker := &fakePublisher{}, &recordingMarker{}
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: topic, events.KindJob: jobs}, Outbox: marker})

	n, err := r.Publish(ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, eventIDs(evs), topic.attempted())
	for _, row := range rows {
		require.True(t, marker.isMarked(row.EventID), "row %s marked", row.EventID)
	}

	got := map[string]sqstypes.Message{}
	for _, m := range receiveAll(t, ctx, aws.ToString(q.QueueUrl), 2) {
		got[aws.ToString(m.MessageAttributes["event_id"].StringValue)] = m
	}
	require.Len(t, got, 2)
	for _, row := range []outbox.Row{rows[0], rows[2]} {
		m := got[row.EventID]
		require.Equal(t, string(row.Payload), aws.ToString(m.Body), "the envelope, byte for byte")
		require.Equal(t, "export.requested", aws.ToString(m.MessageAttributes["type"].StringValue))
	}
}

// failingSQS fails every send.
type failingSQS struct{ err error }

func (f failingSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, f.err
}

func TestJobSenderStopsAtTheFirstFailureAndRefusesUnknownJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	jobs, err := relay.NewJobSender(failingSQS{errors.New("AWS.SimpleQueueService.NonExistentQueue")},
		relay.JobQueues{events.TypeExportRequested: "http://queue"})
	require.NoError(t, err)
	rows := []outbox.Row{exportRow(t, "op-1"), exportRow(t, "op-2")}
	n, err := jobs.Publish(ctx, []relay.Message{relay.MessageOf(rows[0]), relay.MessageOf(rows[1])})
	require.Zero(t, n)
	require.ErrorContains(t, err, rows[0].EventID)
	require.NotErrorIs(t, err, relay.ErrNoRoute, "a failed send is retried")

	other := relay.MessageOf(rows[0])
	other.Type = "report.requested" // a job type with no queue
	n, err = jobs.Publish(ctx, []relay.Message{other})
	require.Zero(t, n)
	require.ErrorIs(t, err, relay.ErrNoRoute)
}

func TestNewJobSenderValidates(t *testing.T) {
	t.Parallel()
	_, err := relay.NewJobSender(nil, nil)
	require.ErrorContains(t, err, "nil SQS client")
	require.ErrorContains(t, err, "no job queues")
	_, err = relay.NewJobSender(sqsClient, relay.JobQueues{events.TypeEnrollmentCreated: "http://q", events.TypeExportRequested: ""})
	require.ErrorContains(t, err, `"enrollment.created" is not a job type`)
	require.ErrorContains(t, err, "no queue URL for export.requested")
}
