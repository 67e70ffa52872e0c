package cwmetric

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// CloudWatch is the part of *cloudwatch.Client that Latest uses.
type CloudWatch interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var _ CloudWatch = (*cloudwatch.Client)(nil)

// Query names one metric series.
type Query struct {
	Namespace  string            // e.g. "AWS/SQS"
	Metric     string            // e.g. "ApproximateAgeOfOldestMessage"
	Dimensions map[string]string // e.g. {"QueueName": "club-notifications"}
	Stat       string            // e.g. "Maximum"
}

// Well-known queries.

// QueueAge is the age in seconds of the oldest message of the queue named
// queueName (the last part of its URL).
func QueueAge(queueName string) Query {
	return Query{Namespace: "AWS/SQS", Metric: "ApproximateAgeOfOldestMessage", Dimensions: map[string]string{"QueueName": queueName}, Stat: "Maximum"}
}

// QueueVisible is the number of messages available for retrieval from the
// queue named queueName.
func QueueVisible(queueName string) Query {
	return Query{Namespace: "AWS/SQS", Metric: "ApproximateNumberOfMessagesVisible", Dimensions: map[string]string{"QueueName": queueName}, Stat: "Maximum"}
}

// QueueInFlight is the number of messages of the queue named queueName that
// a consumer has received and not yet deleted.
func QueueInFlight(queueName string) Query {
	return Query{Namespace: "AWS/SQS", Metric: "ApproximateNumberOfMessagesNotVisible", Dimensions: map[string]string{"QueueName": queueName}, Stat: "Maximum"}
}

// IteratorAge is the age in milliseconds of the last stream record the
// function's event source mappings read.
func IteratorAge(functionName string) Query {
	return Query{Namespace: "AWS/Lambda", Metric: "IteratorAge", Dimensions: map[string]string{"FunctionName": functionName}, Stat: "Maximum"}
}

// Point is one datapoint.
type Point struct {
	Value float64
	At    time.Time
}

// Window is how far back Latest looks: a few minutes of publication delay
// plus a margin.
const Window = 10 * time.Minute

// period is the resolution asked for: SQS and Lambda publish one-minute
// metrics.
const period = 60

// maxQueriesPerCall is GetMetricData's limit.
const maxQueriesPerCall = 500

// Latest returns the newest datapoint of each query within Window before
// now, by index into queries; a query without a datapoint is absent.
func Latest(ctx context.Context, cw CloudWatch, now time.Time, queries []Query) (map[int]Point, error) {
	got := map[int]Point{}
	err := each(ctx, cw, now.Add(-Window), now, types.ScanByTimestampDescending, queries, func(i int, p Point) {
		if old, seen := got[i]; !seen || p.At.After(old.At) {
			got[i] = p
		}
	})
	return got, err
}

// Series returns every datapoint of each query from from to to, oldest
// first, by index into queries; a query without a datapoint is absent. The
// console draws the last hour with it.
func Series(ctx context.Context, cw CloudWatch, from, to time.Time, queries []Query) (map[int][]Point, error) {
	got := map[int][]Point{}
	err := each(ctx, cw, from, to, types.ScanByTimestampAscending, queries, func(i int, p Point) {
		got[i] = append(got[i], p)
	})
	for _, ps := range got {
		slices.SortFunc(ps, func(a, b Point) int { return a.At.Compare(b.At) })
	}
	return got, err
}

// each asks for queries between from and to, in as few calls as the API
// allows, and hands every datapoint to fn with its query's index.
func each(ctx context.Context, cw CloudWatch, from, to time.Time, scan types.ScanBy, queries []Query, fn func(i int, p Point)) error {
	for start := 0; start < len(queries); start += maxQueriesPerCall {
		end := min(start+maxQueriesPerCall, len(queries))
		in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(from), EndTime: aws.Time(to), ScanBy: scan}
		for i := start; i < end; i++ {
			in.MetricDataQueries = append(in.MetricDataQueries, queries[i].dataQuery(i))
		}
		pages := cloudwatch.NewGetMetricDataPaginator(cw, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("get CloudWatch metric data: %w", err)
			}
			for _, r := range out.MetricDataResults {
				var i int
				if _, err := fmt.Sscanf(aws.ToString(r.Id), "q%d", &i); err != nil || i < start || i >= end {
					continue
				}
				for k := range min(len(r.Values), len(r.Timestamps)) {
					fn(i, Point{Value: r.Values[k], At: r.Timestamps[k]})
				}
			}
		}
	}
	return nil
}

func (q Query) dataQuery(i int) types.MetricDataQuery {
	dims := make([]types.Dimension, 0, len(q.Dimensions))
	for name, value := range q.Dimensions {
		dims = append(dims, types.Dimension{Name: aws.String(name), Value: aws.String(value)})
	}
	return types.MetricDataQuery{
		Id: aws.String(fmt.Sprintf("q%d", i)), // ids must start with a lower-case letter
		MetricStat: &types.MetricStat{
			Metric: &types.Metric{Namespace: aws.String(q.Namespace), MetricName: aws.String(q.Metric), Dimensions: dims},
			Period: aws.Int32(period),
			Stat:   aws.String(q.Stat),
		},
		ReturnData: aws.Bool(true),
	}
}
