package relay

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/internal/store"
)

// Routing is where the deployed relay sends rows; the relay function and the
// outbox sweeper read it from the same environment variables.
type Routing struct {
	// TopicARN is the events topic (EVENTS_TOPIC_ARN).
	TopicARN string
	// PurchaseStateMachineARN is the purchase saga's state machine
	// (PURCHASE_STATE_MACHINE_ARN): purchase.requested starts an execution
	// of it.
	PurchaseStateMachineARN string
	// ExportsQueueURL is the bulk work class's exports queue
	// (EXPORTS_QUEUE_URL): export.requested jobs are sent to it.
	ExportsQueueURL string
	// PublishBatch turns on SNS PublishBatch (SNS_PUBLISH_BATCH, default
	// false; the template turns it on).
	PublishBatch bool
}

// RoutingFromEnv reads the routing through getenv (os.Getenv in a
// function's main) and reports every missing or invalid value at once.
func RoutingFromEnv(getenv func(string) string) (Routing, error) {
	var r Routing
	var errs []error
	if r.TopicARN = getenv("EVENTS_TOPIC_ARN"); r.TopicARN == "" {
		errs = append(errs, errors.New("EVENTS_TOPIC_ARN is required"))
	}
	if r.PurchaseStateMachineARN = getenv("PURCHASE_STATE_MACHINE_ARN"); r.PurchaseStateMachineARN == "" {
		errs = append(errs, errors.New("PURCHASE_STATE_MACHINE_ARN is required"))
	}
	if r.ExportsQueueURL = getenv("EXPORTS_QUEUE_URL"); r.ExportsQueueURL == "" {
		errs = append(errs, errors.New("EXPORTS_QUEUE_URL is required"))
	}
	if v := getenv("SNS_PUBLISH_BATCH"); v != "" {
		var err error
		if r.PublishBatch, err = strconv.ParseBool(v); err != nil {
			errs = append(errs, fmt.Errorf("SNS_PUBLISH_BATCH: %q is not a boolean", v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Routing{}, err
	}
	return r, nil
}

// Wiring is what the relay function and the outbox sweeper build alike at
// start: the store and a Relay over its outbox.
type Wiring struct {
	Store *store.Store
	Relay *Relay
}

// Wire builds, over the AWS SDK configuration the function's main loaded,
// the store and a Relay
// with the deployed routes: events to the topic, workflows (purchase.requested,
// and refund.requested as <purchase id>-refund) to the purchase saga, jobs to the queue of their work class
// (export.requested to the exports queue). The Relay logs to logger
// and writes its metrics to metrics, under the dimension Function = function.
func Wire(awsCfg aws.Config, function string, storeCfg store.Config, routing Routing, logger *slog.Logger, metrics io.Writer) (Wiring, error) {
	st, err := store.New(dynamodb.NewFromConfig(awsCfg), storeCfg)
	if err != nil {
		return Wiring{}, err
	}
	topic, err := NewSNSPublisher(sns.NewFromConfig(awsCfg), SNSConfig{TopicARN: routing.TopicARN, Batch: routing.PublishBatch})
	if err != nil {
		return Wiring{}, err
	}
	purchases, err := sfnclient.New(sfn.NewFromConfig(awsCfg), routing.PurchaseStateMachineARN)
	if err != nil {
		return Wiring{}, err
	}
	workflows, err := NewWorkflowStarter(
		Workflows{events.TypePurchaseRequested: purchases, events.TypeRefundRequested: purchases},
		NamedBy(events.TypeRefundRequested, RefundExecution),
	)
	if err != nil {
		return Wiring{}, err
	}
	jobs, err := NewJobSender(sqs.NewFromConfig(awsCfg), JobQueues{events.TypeExportRequested: routing.ExportsQueueURL})
	if err != nil {
		return Wiring{}, err
	}
	r, err := New(Config{
		Routes: Routes{events.KindEvent: topic, events.KindWorkflow: workflows, events.KindJob: jobs},
		Outbox: st.Outbox, Logger: logger, Metrics: metrics,
		MetricDimensions: map[string]string{obs.DimFunction: function},
	})
	if err != nil {
		return Wiring{}, err
	}
	return Wiring{Store: st, Relay: r}, nil
}
