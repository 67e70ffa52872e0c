package provision

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/clubdev/club/localcloud/template"
)

type lambdaAPI interface {
	CreateFunction(context.Context, *lambda.CreateFunctionInput, ...func(*lambda.Options)) (*lambda.CreateFunctionOutput, error)
	UpdateFunctionConfiguration(context.Context, *lambda.UpdateFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.UpdateFunctionConfigurationOutput, error)
	ListEventSourceMappings(context.Context, *lambda.ListEventSourceMappingsInput, ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	CreateEventSourceMapping(context.Context, *lambda.CreateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.CreateEventSourceMappingOutput, error)
	UpdateEventSourceMapping(context.Context, *lambda.UpdateEventSourceMappingInput, ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// runtime is the runtime of every function: the local cloud runs the Go
// binaries built from CodeUri as custom-runtime processes.
const runtime = types.RuntimeProvidedal2023

func (p *provisioner) functions(ctx context.Context) error {
	zipFile, err := placeholderZip()
	if err != nil {
		return fmt.Errorf("provision: placeholder code: %w", err)
	}
	for _, fn := range p.st.Functions {
		if err := p.function(ctx, fn, zipFile); err != nil {
			return resourceError("function", fn.Source, fn.Name, err)
		}
		p.result.Functions[fn.Source] = fn.Name
	}
	return nil
}

// function creates the function, or updates the configuration of an
// existing one so that a re-run picks up template changes.
func (p *provisioner) function(ctx context.Context, fn template.Function, zipFile []byte) error {
	handler := fn.Handler
	if handler == "" {
		handler = "bootstrap"
	}
	env := &types.Environment{Variables: fn.Environment}
	_, err := p.c.lambda.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName:  aws.String(fn.Name),
		Runtime:       runtime,
		Role:          aws.String(p.opts.Role),
		Handler:       aws.String(handler),
		Code:          &types.FunctionCode{ZipFile: zipFile},
		Description:   aws.String(fn.Description),
		Timeout:       aws.Int32(int32(fn.Timeout / time.Second)),
		MemorySize:    aws.Int32(int32(fn.MemorySize)),
		Architectures: architectures(fn.Architectures),
		Environment:   env,
		PackageType:   types.PackageTypeZip,
	})
	if err == nil || !hasCode(err, "ResourceConflictException") {
		return err
	}
	_, err = p.c.lambda.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{
		FunctionName: aws.String(fn.Name),
		Runtime:      runtime,
		Role:         aws.String(p.opts.Role),
		Handler:      aws.String(handler),
		Description:  aws.String(fn.Description),
		Timeout:      aws.Int32(int32(fn.Timeout / time.Second)),
		MemorySize:   aws.Int32(int32(fn.MemorySize)),
		Environment:  env,
	})
	if err != nil {
		return fmt.Errorf("update existing function: %w", err)
	}
	return nil
}

func architectures(names []string) []types.Architecture {
	out := make([]types.Architecture, 0, len(names))
	for _, n := range names {
		out = append(out, types.Architecture(n))
	}
	return out
}

// eventSourceMappings creates one mapping per SQS and DynamoDB event. The
// request carries every setting of the template so that it is valid on AWS;
// the emulator keeps only the function, source, batch size, batching window
// and Enabled, and the local cloud's pollers read the rest from the
// template. An existing mapping for the same function and source is updated
// rather than duplicated.
func (p *provisioner) eventSourceMappings(ctx context.Context) error {
	for _, fn := range p.st.Functions {
		for _, e := range fn.SQSEvents {
			if err := p.mapping(ctx, fn, e.Name, sqsMapping(fn.Name, e)); err != nil {
				return err
			}
		}
		for _, e := range fn.DynamoDBEvents {
			if err := p.mapping(ctx, fn, e.Name, streamMapping(fn.Name, e)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *provisioner) mapping(ctx context.Context, fn template.Function, event string, in *lambda.CreateEventSourceMappingInput) error {
	key := fn.Source + "." + event
	uuid, err := p.upsertMapping(ctx, in)
	if err != nil {
		return resourceError("event source mapping", key, aws.ToString(in.EventSourceArn), err)
	}
	p.result.EventSourceMappings[key] = uuid
	return nil
}

func (p *provisioner) upsertMapping(ctx context.Context, in *lambda.CreateEventSourceMappingInput) (string, error) {
	list, err := p.c.lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{
		FunctionName:   in.FunctionName,
		EventSourceArn: in.EventSourceArn,
	})
	if err != nil {
		return "", fmt.Errorf("list: %w", err)
	}
	if len(list.EventSourceMappings) == 0 {
		out, err := p.c.lambda.CreateEventSourceMapping(ctx, in)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.UUID), nil
	}
	uuid := list.EventSourceMappings[0].UUID
	_, err = p.c.lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{
		UUID:                           uuid,
		FunctionName:                   in.FunctionName,
		BatchSize:                      in.BatchSize,
		MaximumBatchingWindowInSeconds: in.MaximumBatchingWindowInSeconds,
		Enabled:                        in.Enabled,
		FunctionResponseTypes:          in.FunctionResponseTypes,
		ScalingConfig:                  in.ScalingConfig,
		FilterCriteria:                 in.FilterCriteria,
		BisectBatchOnFunctionError:     in.BisectBatchOnFunctionError,
		MaximumRetryAttempts:           in.MaximumRetryAttempts,
		MaximumRecordAgeInSeconds:      in.MaximumRecordAgeInSeconds,
		DestinationConfig:              in.DestinationConfig,
		ParallelizationFactor:          in.ParallelizationFactor,
	})
	if err != nil {
		return "", fmt.Errorf("update: %w", err)
	}
	return aws.ToString(uuid), nil
}

func sqsMapping(function string, e template.SQSEvent) *lambda.CreateEventSourceMappingInput {
	in := &lambda.CreateEventSourceMappingInput{
		FunctionName:                   aws.String(function),
		EventSourceArn:                 aws.String(e.QueueARN),
		BatchSize:                      aws.Int32(int32(e.BatchSize)),
		MaximumBatchingWindowInSeconds: aws.Int32(int32(e.MaximumBatchingWindow / time.Second)),
		Enabled:                        aws.Bool(e.Enabled),
		FunctionResponseTypes:          responseTypes(e.ReportBatchItemFailures),
		FilterCriteria:                 filterCriteria(e.FilterCriteria),
	}
	if e.MaximumConcurrency > 0 {
		in.ScalingConfig = &types.ScalingConfig{MaximumConcurrency: aws.Int32(int32(e.MaximumConcurrency))}
	}
	return in
}

func streamMapping(function string, e template.DynamoDBEvent) *lambda.CreateEventSourceMappingInput {
	maxAge := int32(-1) // the template model's 0 is AWS's -1: no limit
	if e.MaximumRecordAge > 0 {
		maxAge = int32(e.MaximumRecordAge / time.Second)
	}
	in := &lambda.CreateEventSourceMappingInput{
		FunctionName:                   aws.String(function),
		EventSourceArn:                 aws.String(e.StreamARN),
		StartingPosition:               types.EventSourcePosition(e.StartingPosition),
		BatchSize:                      aws.Int32(int32(e.BatchSize)),
		MaximumBatchingWindowInSeconds: aws.Int32(int32(e.MaximumBatchingWindow / time.Second)),
		Enabled:                        aws.Bool(e.Enabled),
		FunctionResponseTypes:          responseTypes(e.ReportBatchItemFailures),
		FilterCriteria:                 filterCriteria(e.FilterCriteria),
		BisectBatchOnFunctionError:     aws.Bool(e.BisectBatchOnFunctionError),
		MaximumRetryAttempts:           aws.Int32(int32(e.MaximumRetryAttempts)),
		MaximumRecordAgeInSeconds:      aws.Int32(maxAge),
		ParallelizationFactor:          aws.Int32(int32(e.ParallelizationFactor)),
	}
	if e.OnFailureDestination != "" {
		in.DestinationConfig = &types.DestinationConfig{
			OnFailure: &types.OnFailure{Destination: aws.String(e.OnFailureDestination)},
		}
	}
	return in
}

func responseTypes(reportItemFailures bool) []types.FunctionResponseType {
	if !reportItemFailures {
		return nil
	}
	return []types.FunctionResponseType{types.FunctionResponseTypeReportBatchItemFailures}
}

func filterCriteria(fc *template.FilterCriteria) *types.FilterCriteria {
	if fc == nil {
		return nil
	}
	out := &types.FilterCriteria{}
	for _, p := range fc.Patterns {
		out.Filters = append(out.Filters, types.Filter{Pattern: aws.String(p)})
	}
	return out
}
