package provision

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

type ssmAPI interface {
	PutParameter(context.Context, *ssm.PutParameterInput, ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
}

// parameters writes the SSM parameters, overwriting, so the template's value
// wins on every run.
func (p *provisioner) parameters(ctx context.Context) error {
	for _, prm := range p.st.SSMParameters {
		in := &ssm.PutParameterInput{
			Name:      aws.String(prm.Name),
			Type:      ssmtypes.ParameterType(prm.Type),
			Value:     aws.String(prm.Value),
			Overwrite: aws.Bool(true),
		}
		if prm.Description != "" {
			in.Description = aws.String(prm.Description)
		}
		if _, err := p.c.ssm.PutParameter(ctx, in); err != nil {
			return resourceError("SSM parameter", prm.Source, prm.Name, err)
		}
		p.result.Parameters[prm.Source] = prm.Name
	}
	return nil
}
