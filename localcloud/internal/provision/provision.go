package provision

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/clubdev/club/localcloud/template"
)

// Options tune Apply. The zero value is ready to use.
type Options struct {
	// Role is the execution role ARN given to every function. Nothing checks
	// it locally; the default is arn:aws:iam::<account>:role/<stack>-local.
	Role string
}

// Result is what was provisioned, keyed by logical ID: what .club/stack.json
// and the rest of the local cloud need to reach each resource.
type Result struct {
	Tables        map[string]string `json:"tables"`         // table name
	Queues        map[string]string `json:"queues"`         // queue URL (the template's, on the local endpoint)
	Topics        map[string]string `json:"topics"`         // topic ARN
	Subscriptions map[string]string `json:"subscriptions"`  // subscription ARN, by template.Subscription.Source
	Buckets       map[string]string `json:"buckets"`        // bucket name
	Functions     map[string]string `json:"functions"`      // function name
	Parameters    map[string]string `json:"ssm_parameters"` // SSM parameter name
	// EventSourceMappings maps "<FunctionLogicalId>.<EventName>" to the
	// mapping's UUID.
	EventSourceMappings map[string]string `json:"event_source_mappings"`
	// StateMachines holds ARNs only: state machines are run by the local
	// cloud's executor, not created in the emulator.
	StateMachines map[string]string `json:"state_machines"`
	Outputs       map[string]string `json:"outputs"`
}

func newResult(st *template.Stack) *Result {
	r := &Result{
		Tables:              map[string]string{},
		Queues:              map[string]string{},
		Topics:              map[string]string{},
		Subscriptions:       map[string]string{},
		Buckets:             map[string]string{},
		Functions:           map[string]string{},
		Parameters:          map[string]string{},
		EventSourceMappings: map[string]string{},
		StateMachines:       map[string]string{},
		Outputs:             map[string]string{},
	}
	for _, sm := range st.StateMachines {
		r.StateMachines[sm.Source] = sm.ARN
	}
	for k, v := range st.Outputs {
		r.Outputs[k] = v
	}
	return r
}

// clients are the AWS SDK clients Apply uses, each narrowed to the calls it
// makes (see the interfaces in the files per service).
type clients struct {
	dynamodb dynamoDBAPI
	sqs      sqsAPI
	sns      snsAPI
	s3       s3API
	lambda   lambdaAPI
	ssm      ssmAPI
}

func newClients(cfg aws.Config, endpoint, region string) clients {
	cfg = cfg.Copy()
	if cfg.Region == "" {
		cfg.Region = region
	}
	base := aws.String(endpoint)
	return clients{
		dynamodb: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = base }),
		sqs:      sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = base }),
		sns:      sns.NewFromConfig(cfg, func(o *sns.Options) { o.BaseEndpoint = base }),
		// A single local endpoint cannot serve virtual-hosted bucket names.
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = base; o.UsePathStyle = true }),
		lambda: lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = base }),
		ssm:    ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = base }),
	}
}

// Apply creates every resource of st on the AWS endpoint (the local cloud's
// front, or the emulator directly) with the AWS SDK, and returns where they
// are.
//
// Resources are created in dependency order, targets before what references
// them: tables, queues (dead-letter queues before the queues redriving to
// them), topics, buckets, SSM parameters, functions, then subscriptions and
// event source mappings. State machines are not created (the local cloud's
// executor runs them) but are listed in the Result.
//
// Apply is idempotent: a resource that already exists is kept and, where the
// API allows, updated to the template's settings, so running it twice on the
// same endpoint succeeds and creates no duplicate subscription or mapping.
// It stops at the first failure, whose error names the resource and carries
// the AWS error. Apply is not meant to run concurrently with itself on one
// endpoint.
func Apply(ctx context.Context, cfg aws.Config, endpoint string, st *template.Stack, opts Options) (*Result, error) {
	if st == nil {
		return nil, errors.New("provision: nil stack")
	}
	if endpoint == "" {
		return nil, errors.New("provision: no endpoint")
	}
	return apply(ctx, newClients(cfg, endpoint, st.Region), st, opts)
}

func apply(ctx context.Context, c clients, st *template.Stack, opts Options) (*Result, error) {
	if opts.Role == "" {
		opts.Role = fmt.Sprintf("arn:aws:iam::%s:role/%s-local", st.AccountID, st.Name)
	}
	p := &provisioner{c: c, st: st, opts: opts, result: newResult(st)}
	steps := []func(context.Context) error{
		p.tables,
		p.queues,
		p.topics,
		p.buckets,
		p.parameters,
		p.functions,
		p.subscriptions,
		p.eventSourceMappings,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return p.result, nil
}

type provisioner struct {
	c      clients
	st     *template.Stack
	opts   Options
	result *Result
}

// resourceError names the resource a call failed for.
func resourceError(kind, source, name string, err error) error {
	return fmt.Errorf("provision %s %s (%s): %w", kind, source, name, err)
}

// hasCode reports whether err is an AWS API error with one of the codes.
func hasCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, c := range codes {
		if apiErr.ErrorCode() == c {
			return true
		}
	}
	return false
}

// placeholderZip is the code package of every function: the emulator needs
// one, but the local cloud runs the binary built from CodeUri through the
// Lambda runtime API, never this.
var placeholderZip = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "bootstrap", Method: zip.Deflate})
	if err != nil {
		return nil, err
	}
	script := "#!/bin/sh\necho 'placeholder: the local cloud runs the function built from CodeUri' >&2\nexit 1\n"
	if _, err := w.Write([]byte(script)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
})
