package sfn_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// memJournal keeps entries as a file would: each one encoded.
type memJournal struct {
	mu      sync.Mutex
	entries [][]byte
}

func (j *memJournal) Record(e sfn.JournalEntry) {
	b, _ := json.Marshal(e)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, b)
}

func (j *memJournal) read(t *testing.T) []sfn.JournalEntry {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]sfn.JournalEntry, len(j.entries))
	for i, b := range j.entries {
		require.NoError(t, json.Unmarshal(b, &out[i]))
	}
	return out
}

// restarted is a new service on a clock at `at`, restored from entries and
// writing to a journal of its own (which starts with what it was given).
func restarted(t *testing.T, at time.Time, entries []sfn.JournalEntry, resource string, h sfn.TaskHandler) (*sfntest.Env, *memJournal, int) {
	t.Helper()
	e := sfntest.New(t, sfntest.Options{Start: at, Manual: true})
	e.Handle(resource, h)
	j := &memJournal{}
	for _, entry := range entries {
		j.Record(entry)
	}
	e.Service.SetJournal(j)
	n, err := e.Service.Restore(entries)
	require.NoError(t, err)
	return e, j, n
}

const callbackResource = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"

// A callback task the local cloud stopped under waits, after the restart,
// for the token it had handed out: the callback that arrives then
// completes the execution, nothing is invoked again and the history reads
// as if there had been no stop.
func TestSuspendedCallbackTaskResumesWithItsToken(t *testing.T) {
	t.Parallel()
	e := manual(t)
	j := &memJournal{}
	e.Service.SetJournal(j)
	queue := newFake(fakeResponse{Output: json.RawMessage(`{"MessageId":"m-1"}`)})
	e.Handle(callbackResource, queue)
	arn := e.Start(e.CreateStateMachine("hold", holdDefinition), `{"purchase":"p-1"}`)
	tok := token(t, queue)
	e.Advance(10 * time.Minute)
	e.Service.Suspend()

	again := newFake(fakeResponse{Output: json.RawMessage(`{"MessageId":"m-2"}`)})
	next, j2, resumed := restarted(t, epoch.Add(10*time.Minute), j.read(t), callbackResource, again)
	require.Equal(t, 1, resumed)
	x, err := next.Service.DescribeExecution(context.Background(), arn)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusRunning, x.Status)
	require.NoError(t, next.Service.SendTaskSuccess(context.Background(), tok, `{"paid":true}`))
	x = next.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"purchase":"p-1","payment":{"paid":true},"status":"confirmed"}`, x.Output)
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted",
		"TaskSucceeded", "TaskStateExited", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"}, next.EventTypes(arn))
	require.Empty(t, again.requests, "the task was not invoked again")
	h, err := next.Service.GetExecutionHistory(context.Background(), arn)
	require.NoError(t, err)
	for i, ev := range h {
		require.EqualValues(t, i+1, ev.ID)
		require.EqualValues(t, i, ev.PreviousEventID, "event %d follows on", ev.ID)
	}

	// A finished execution comes back finished, with its history.
	next.Service.Suspend()
	third, _, resumed := restarted(t, epoch.Add(time.Hour), j2.read(t), callbackResource, again)
	require.Zero(t, resumed)
	x3, err := third.Service.DescribeExecution(context.Background(), arn)
	require.NoError(t, err)
	require.Equal(t, x, x3)
	require.Equal(t, next.EventTypes(arn), third.EventTypes(arn))
	// The token of a task that ended before the stop is not known any more
	// (InvalidToken; sfnclient treats it as TaskTimedOut: the task ended).
	require.ErrorIs(t, third.Service.SendTaskSuccess(context.Background(), tok, `{}`), sfn.ErrCode(sfn.CodeInvalidToken))
}

// A callback task whose deadline passed while the local cloud was stopped
// times out as soon as it is resumed, and its Catch runs.
func TestCallbackDeadlinePassedWhileStoppedTimesOutAtOnce(t *testing.T) {
	t.Parallel()
	e := manual(t)
	j := &memJournal{}
	e.Service.SetJournal(j)
	queue := newFake(fakeResponse{Output: json.RawMessage(`{"MessageId":"m-1"}`)})
	e.Handle(callbackResource, queue)
	arn := e.Start(e.CreateStateMachine("hold", holdDefinition), `{"purchase":"p-2"}`)
	tok := token(t, queue)
	e.Advance(time.Minute)
	e.Service.Suspend()

	restart := epoch.Add(2 * time.Hour) // the 15-minute hold ended long ago
	next, _, resumed := restarted(t, restart, j.read(t), callbackResource, newFake())
	require.Equal(t, 1, resumed)
	stop := next.Clock.AutoAdvance()
	defer stop()
	x := next.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `"expired"`, string(mustField(t, x.Output, "status")))
	require.Less(t, x.StopDate.Sub(restart), time.Second, "in virtual time: at once, not 15 minutes after the restart")
	require.ErrorIs(t, next.Service.SendTaskSuccess(context.Background(), tok, `{}`), sfn.ErrCode(sfn.CodeTaskTimedOut))
}

// A Wait state resumed after a restart waits only what is left of it.
func TestSuspendedWaitWaitsWhatIsLeft(t *testing.T) {
	t.Parallel()
	const def = `{"StartAt": "Hold", "States": {
		"Hold": {"Type": "Wait", "Seconds": 3600, "Next": "Done"},
		"Done": {"Type": "Pass", "Result": "done", "End": true}}}`
	e := manual(t)
	j := &memJournal{}
	e.Service.SetJournal(j)
	arn := e.Start(e.CreateStateMachine("wait", def), `{}`)
	e.Advance(30 * time.Minute)
	e.Service.Suspend()

	next, _, resumed := restarted(t, epoch.Add(40*time.Minute), j.read(t), callbackResource, newFake())
	require.Equal(t, 1, resumed)
	next.Advance(19 * time.Minute)
	x, err := next.Service.DescribeExecution(context.Background(), arn)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusRunning, x.Status, "59 minutes in: still waiting")
	next.Advance(time.Minute)
	x = next.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.Equal(t, epoch.Add(time.Hour), x.StopDate, "it ends when the hour that began before the stop is over")
	require.Equal(t, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateExited", "PassStateEntered", "PassStateExited",
		"ExecutionSucceeded"}, next.EventTypes(arn))
}

func mustField(t *testing.T, doc, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(doc), &m))
	return m[field]
}
