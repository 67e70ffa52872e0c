package clubctl

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/ops/cwmetric"
	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/internal/ops/stackimport"
	"github.com/clubdev/club/internal/ops/status"
	"github.com/clubdev/club/internal/stackfile"
)

// clients builds the AWS clients the commands use from one configuration.
// Each is a function so that a test can swap one service for a hand-written
// fake (kumo creates no CloudFormation resources and serves no CloudWatch
// metrics) and keep the real clients for the rest.
type clients struct {
	cloudFormation func(aws.Config) stackimport.CloudFormation
	cloudWatch     func(aws.Config) cwmetric.CloudWatch
	// alarms reads alarm states (CloudWatch on AWS; on the local cloud the
	// emulator, whose alarms its evaluator sets).
	alarms func(aws.Config) status.AlarmDescriber
}

func sdkClients() clients {
	return clients{
		cloudFormation: func(cfg aws.Config) stackimport.CloudFormation { return cloudformation.NewFromConfig(cfg) },
		cloudWatch:     func(cfg aws.Config) cwmetric.CloudWatch { return cloudwatch.NewFromConfig(cfg) },
		alarms:         func(cfg aws.Config) status.AlarmDescriber { return cloudwatch.NewFromConfig(cfg) },
	}
}

// target is a stack and the means to reach it: what most commands start from.
type target struct {
	stack   *stackfile.Stack
	aws     aws.Config
	catalog *queues.Catalog
	sqs     *sqs.Client
}

// loadTarget reads the stack file, lists its queues and configures the AWS
// clients for it.
func (g *Globals) loadTarget(ctx context.Context) (*target, error) {
	stack, err := g.LoadStack()
	if err != nil {
		return nil, err
	}
	cat, err := queues.NewCatalog(stack)
	if err != nil {
		return nil, fmt.Errorf("stack file %s: %w", g.StackFile, err)
	}
	cfg, err := g.AWSConfig(ctx, stack)
	if err != nil {
		return nil, err
	}
	return &target{stack: stack, aws: cfg, catalog: cat, sqs: sqs.NewFromConfig(cfg)}, nil
}

func (t *target) dynamoDB() *dynamodb.Client { return dynamodb.NewFromConfig(t.aws) }

// findQueue resolves --queue, as a usage error when it names no queue.
func (t *target) findQueue(name string) (queues.Queue, error) {
	if name == "" {
		return queues.Queue{}, usageErrorf("--queue is required")
	}
	// Not a usage error: the name may well exist in another stack.
	return t.catalog.Find(name)
}
