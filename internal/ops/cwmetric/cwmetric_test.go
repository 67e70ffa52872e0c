package cwmetric_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/cwmetric"
	"github.com/clubdev/club/internal/ops/opstest"
)

// fakeCloudWatch answers each query from a table keyed by the first
// dimension's value, newest last, as CloudWatch may return them in any order.
type fakeCloudWatch struct {
	series map[string][]cwmetric.Point
	inputs []*cloudwatch.GetMetricDataInput
}

func (f *fakeCloudWatch) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.inputs = append(f.inputs, in)
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		r := types.MetricDataResult{Id: q.Id}
		for _, p := range f.series[aws.ToString(q.MetricStat.Metric.Dimensions[0].Value)] {
			r.Values = append(r.Values, p.Value)
			r.Timestamps = append(r.Timestamps, p.At)
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func TestLatestPicksTheNewestDatapointPerQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cw := &fakeCloudWatch{series: map[string][]cwmetric.Point{
		"club-notifications": {{Value: 90, At: now.Add(-3 * time.Minute)}, {Value: 30, At: now.Add(-5 * time.Minute)}},
		"RelayFunction":      {{Value: 1500, At: now.Add(-2 * time.Minute)}},
	}}
	got, err := cwmetric.Latest(context.Background(), cw, now, []cwmetric.Query{
		cwmetric.QueueAge("club-notifications"),
		cwmetric.QueueAge("club-quiet"),
		cwmetric.IteratorAge("RelayFunction"),
	})
	require.NoError(t, err)
	require.Equal(t, map[int]cwmetric.Point{
		0: {Value: 90, At: now.Add(-3 * time.Minute)},
		2: {Value: 1500, At: now.Add(-2 * time.Minute)},
	}, got)

	require.Len(t, cw.inputs, 1, "one call for all queries")
	in := cw.inputs[0]
	require.Equal(t, now.Add(-cwmetric.Window), *in.StartTime)
	q := in.MetricDataQueries[0].MetricStat
	require.Equal(t, "AWS/SQS", *q.Metric.Namespace)
	require.Equal(t, "ApproximateAgeOfOldestMessage", *q.Metric.MetricName)
	require.Equal(t, "Maximum", *q.Stat)
	require.Equal(t, "IteratorAge", *in.MetricDataQueries[2].MetricStat.Metric.MetricName)
}

// kumo serves CloudWatch but publishes no service metrics: every query comes
// back without a datapoint, which callers treat as "no metric here".
func TestLatestOnAnEndpointWithoutServiceMetrics(t *testing.T) {
	t.Parallel()
	cw := cloudwatch.NewFromConfig(opstest.AWSConfig(opstest.Endpoint(t, nil)))
	got, err := cwmetric.Latest(context.Background(), cw, time.Now(), []cwmetric.Query{cwmetric.QueueAge("nothing-here")})
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestSeriesReturnsEveryDatapointOldestFirst(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cw := &fakeCloudWatch{series: map[string][]cwmetric.Point{
		"club-notifications": {{Value: 4, At: now.Add(-time.Minute)}, {Value: 9, At: now.Add(-50 * time.Minute)}, {Value: 6, At: now.Add(-30 * time.Minute)}},
	}}
	got, err := cwmetric.Series(context.Background(), cw, now.Add(-time.Hour), now, []cwmetric.Query{
		cwmetric.QueueVisible("club-quiet"),
		cwmetric.QueueVisible("club-notifications"),
	})
	require.NoError(t, err)
	require.Equal(t, map[int][]cwmetric.Point{1: {
		{Value: 9, At: now.Add(-50 * time.Minute)}, {Value: 6, At: now.Add(-30 * time.Minute)}, {Value: 4, At: now.Add(-time.Minute)},
	}}, got)
	require.Len(t, cw.inputs, 1)
	require.Equal(t, now.Add(-time.Hour), *cw.inputs[0].StartTime)
	require.Equal(t, "ApproximateNumberOfMessagesVisible", *cw.inputs[0].MetricDataQueries[0].MetricStat.Metric.MetricName)
}
