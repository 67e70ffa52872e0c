package infra_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/localcloud/template"
)

func loadTemplate(t *testing.T, params map[string]string) *template.Stack {
	t.Helper()
	st, err := template.Load("template.yaml", template.Options{Parameters: params})
	require.NoError(t, err)
	return st
}

type widget struct {
	Type       string
	Properties struct {
		Title       string
		Query       string
		Metrics     [][]any
		Annotations struct {
			Horizontal []struct {
				Label string
				Value float64
				YAxis string
			}
		}
	}
}

// metric is one line of a metric widget: namespace, name and dimensions,
// rendered as "AWS/SQS ApproximateAgeOfOldestMessage QueueName=club-roster".
func (w widget) metrics() []string {
	var out []string
	for _, m := range w.Properties.Metrics {
		var parts []string
		for i, v := range m {
			s, ok := v.(string)
			if !ok {
				continue // the rendering options
			}
			switch {
			case i < 2:
				parts = append(parts, s)
			case i%2 == 0:
				parts = append(parts, s+"="+fmt.Sprint(m[i+1]))
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func dashboard(t *testing.T, st *template.Stack) []widget {
	t.Helper()
	require.Len(t, st.Dashboards, 1)
	var body struct{ Widgets []widget }
	require.NoError(t, json.Unmarshal([]byte(st.Dashboards[0].Body), &body))
	return body.Widgets
}

// The dashboard shows what `clubctl status` shows: for every work class (the
// catalog clubctl reads) the depth and the age of the oldest message of each
// of its queues, against the class's maximum as the stack has it; every
// DLQ's depth; the relay's stream iterator age; the outbox's publish lag and
// oldest unpublished row; the purchases.
func TestDashboardShowsEveryWorkClassAgainstItsMaximum(t *testing.T) {
	t.Parallel()
	// Non-default maxima, so that the annotation must follow the parameter.
	params := map[string]string{}
	for i, c := range queues.WorkClasses {
		params[c.Parameter] = fmt.Sprint(41 + i)
	}
	st := loadTemplate(t, params)
	widgets := dashboard(t, st)
	queueName := map[string]string{}
	for _, q := range st.Queues {
		queueName[q.Source] = q.Name
	}
	var all []string
	for _, w := range widgets {
		all = append(all, w.metrics()...)
	}

	for i, c := range queues.WorkClasses {
		found := false
		for _, w := range widgets {
			ms := w.metrics()
			if !slices.Contains(ms, "AWS/SQS ApproximateAgeOfOldestMessage QueueName="+queueName[c.Queues[0]]) {
				continue
			}
			found = true
			for _, q := range c.Queues {
				require.Contains(t, ms, "AWS/SQS ApproximateNumberOfMessagesVisible QueueName="+queueName[q], "%s: depth of %s", c.Name, q)
				require.Contains(t, ms, "AWS/SQS ApproximateAgeOfOldestMessage QueueName="+queueName[q], "%s: age of %s", c.Name, q)
			}
			h := w.Properties.Annotations.Horizontal
			require.Len(t, h, 1, "%s: its maximum age", c.Name)
			require.Equal(t, float64(41+i), h[0].Value, "%s: the maximum as the stack has it", c.Name)
			require.Contains(t, h[0].Label, c.Parameter)
		}
		require.True(t, found, "no widget for the %s work class", c.Name)
	}

	for _, q := range st.Queues {
		if q.RedrivePolicy == nil {
			continue
		}
		for _, dlq := range st.Queues {
			if dlq.ARN == q.RedrivePolicy.DeadLetterTargetARN {
				require.Contains(t, all, "AWS/SQS ApproximateNumberOfMessagesVisible QueueName="+dlq.Name, "depth of %s", dlq.Source)
			}
		}
	}
	require.Contains(t, all, "AWS/SQS ApproximateNumberOfMessagesVisible QueueName="+queueName["RelayFailuresQueue"])

	var relay, machine string
	for _, fn := range st.Functions {
		if fn.Source == "RelayFunction" {
			relay = fn.Name
		}
	}
	for _, sm := range st.StateMachines {
		if sm.Source == "PurchaseStateMachine" {
			machine = sm.ARN
		}
	}
	require.Contains(t, all, "AWS/Lambda IteratorAge FunctionName="+relay)
	require.Contains(t, all, "Club OutboxPublishLag Function=relay")
	require.Contains(t, all, "Club OutboxOldestUnpublishedAge Function=outbox-sweeper")
	require.Contains(t, all, "Club OutboxStaleUnpublished Function=outbox-sweeper")
	for _, m := range []string{"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"} {
		require.Contains(t, all, "AWS/States "+m+" StateMachineArn="+machine)
	}

	// Purchases by the status they reached: the saga's steps done, from the
	// purchase tasks' own log group.
	var logGroup string
	for _, lg := range st.LogGroups {
		if lg.Source == "PurchaseTasksLogGroup" {
			logGroup = lg.Name
		}
	}
	require.NotEmpty(t, logGroup)
	var query string
	for _, w := range widgets {
		if w.Type == "log" {
			query = w.Properties.Query
		}
	}
	require.Contains(t, query, "SOURCE '"+logGroup+"'")
	for _, step := range []string{"grant", "expire", "begin_refund", "check_refund", "needs_reconciliation"} {
		require.Contains(t, query, "'"+step+"'")
	}
	require.Contains(t, query, "stats count(*) as purchases by step")
}
