package queues_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/internal/stackfile"
)

func clubQueues() map[string]string {
	base := "http://127.0.0.1:4566/000000000000/club-"
	return map[string]string{
		"NotificationsQueue": base + "notifications", "NotificationsDLQ": base + "notifications-dlq",
		"AnalyticsQueue": base + "analytics", "AnalyticsDLQ": base + "analytics-dlq",
		"RosterQueue": base + "roster", "RosterDLQ": base + "roster-dlq",
		"ExportsQueue": base + "exports", "ExportsDLQ": base + "exports-dlq",
		"RelayFailuresQueue": base + "relay-failures",
		"OrphanDLQ":          base + "orphan-dlq",
	}
}

func TestCatalogPairsQueuesWithTheirDLQAndClass(t *testing.T) {
	t.Parallel()
	cat, err := queues.NewCatalog(&stackfile.Stack{Queues: clubQueues(), Outputs: map[string]string{"UrgentMaxAgeSeconds": "45"}})
	require.NoError(t, err)

	type row struct {
		name, dlq, class string
		maxAge           time.Duration
	}
	var got []row
	for _, q := range cat.Queues() {
		r := row{name: q.Name, dlq: q.DLQName}
		if q.Class != nil {
			r.class, r.maxAge = q.Class.Name, q.Class.MaxAge
		}
		got = append(got, r)
	}
	require.Equal(t, []row{
		{"AnalyticsQueue", "AnalyticsDLQ", "consumer", 300 * time.Second},
		{"ExportsQueue", "ExportsDLQ", "bulk", 900 * time.Second},
		{"NotificationsQueue", "NotificationsDLQ", "urgent", 45 * time.Second}, // the stack's value
		{"RelayFailuresQueue", "", "", 0},
		{"RosterQueue", "RosterDLQ", "consumer", 300 * time.Second},
		{"OrphanDLQ", "", "", 0},
	}, got)
	require.Len(t, cat.WithDLQ(), 4)

	notifications, err := cat.Find("notifications")
	require.NoError(t, err)
	require.True(t, notifications.Breaches(46*time.Second))
	require.False(t, notifications.Breaches(45*time.Second))
	relay, err := cat.Find("RelayFailuresQueue")
	require.NoError(t, err)
	require.False(t, relay.Breaches(time.Hour), "no class, no limit")
}

func TestCatalogFind(t *testing.T) {
	t.Parallel()
	cat, err := queues.NewCatalog(&stackfile.Stack{Queues: clubQueues()})
	require.NoError(t, err)
	for _, name := range []string{"RosterQueue", "rosterqueue", "roster", "RosterDLQ", " Roster "} {
		q, err := cat.Find(name)
		require.NoError(t, err, name)
		require.Equal(t, "RosterQueue", q.Name, name)
		require.Equal(t, "RosterDLQ", q.DLQName)
	}
	_, err = cat.Find("emails")
	require.ErrorIs(t, err, queues.ErrUnknownQueue)
	require.ErrorContains(t, err, `unknown queue "emails" (known: AnalyticsQueue, ExportsQueue, NotificationsQueue, RelayFailuresQueue, RosterQueue, OrphanDLQ)`)

	empty, err := queues.NewCatalog(&stackfile.Stack{})
	require.NoError(t, err)
	_, err = empty.Find("roster")
	require.ErrorContains(t, err, "the stack file lists no queues")
}

func TestCatalogRejectsABadClassParameter(t *testing.T) {
	t.Parallel()
	_, err := queues.NewCatalog(&stackfile.Stack{Queues: clubQueues(), Outputs: map[string]string{"ConsumerMaxAgeSeconds": "five minutes"}})
	require.ErrorContains(t, err, `ConsumerMaxAgeSeconds = "five minutes"`)
}

// holdingQueues are queues no consumer reads, whose age alarm says how long
// something has waited to be released rather than a class's allowed age:
// owed mail parked while the mail provider is down (docs/architecture.md).
var holdingQueues = map[string]bool{"NotificationsParkingQueue": true}

// The work classes repeat what the template says in its parameters and age
// alarms; this keeps them in step.
func TestWorkClassesMatchTheTemplate(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "infra", "template.yaml"))
	require.NoError(t, err)
	var tpl struct {
		Parameters map[string]struct {
			Default yaml.Node `yaml:"Default"`
		} `yaml:"Parameters"`
		Resources map[string]struct {
			Type       string               `yaml:"Type"`
			Properties map[string]yaml.Node `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &tpl))

	// queue logical id → the parameter its age alarm's threshold refers to
	alarmed := map[string]string{}
	for name, r := range tpl.Resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		metric := r.Properties["MetricName"]
		if metric.Value != "ApproximateAgeOfOldestMessage" {
			continue
		}
		var dims []struct {
			Name  string    `yaml:"Name"`
			Value yaml.Node `yaml:"Value"`
		}
		dimsNode := r.Properties["Dimensions"]
		require.NoError(t, dimsNode.Decode(&dims), name)
		require.Len(t, dims, 1, name)
		require.Equal(t, "!GetAtt", dims[0].Value.Tag, name)
		queue, _, _ := strings.Cut(dims[0].Value.Value, ".")
		if holdingQueues[queue] {
			continue
		}
		threshold := r.Properties["Threshold"]
		require.Equal(t, "!Ref", threshold.Tag, "%s: the threshold is a class parameter", name)
		alarmed[queue] = threshold.Value
	}

	want := map[string]string{}
	for _, c := range queues.WorkClasses {
		def, ok := tpl.Parameters[c.Parameter]
		require.True(t, ok, "template parameter %s", c.Parameter)
		secs, err := strconv.Atoi(def.Default.Value)
		require.NoError(t, err)
		require.Equal(t, c.DefaultMaxAge, time.Duration(secs)*time.Second, c.Parameter)
		for _, q := range c.Queues {
			want[q] = c.Parameter
		}
	}
	require.Equal(t, want, alarmed)
}
