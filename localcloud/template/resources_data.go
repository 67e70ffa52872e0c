package template

import (
	"encoding/json"
	"fmt"
)

// The resource types below are kept as data only: the local cloud enforces
// no IAM and serves no dashboards, but the security checks and template
// tests read them, and every reference to them must resolve as on AWS.

const (
	typeRole         = "AWS::IAM::Role"
	typeBucketPolicy = "AWS::S3::BucketPolicy"
	typeDashboard    = "AWS::CloudWatch::Dashboard"
)

// Role is an AWS::IAM::Role, kept as data: a function's Role names its ARN.
type Role struct {
	Source                   string
	Name                     string
	ARN                      string
	AssumeRolePolicyDocument json.RawMessage
	ManagedPolicyARNs        []string
	// Policies are the inline policies, in template order.
	Policies []RolePolicy
}

// RolePolicy is one inline policy of a Role.
type RolePolicy struct {
	PolicyName     string
	PolicyDocument json.RawMessage
}

// BucketPolicy is an AWS::S3::BucketPolicy, kept as data (no IAM locally).
type BucketPolicy struct {
	Source         string
	Bucket         string
	PolicyDocument json.RawMessage
}

// Dashboard is an AWS::CloudWatch::Dashboard, kept as data: Body is the
// resolved DashboardBody (JSON text).
type Dashboard struct {
	Source string
	Name   string
	Body   string
}

func roleRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name, attrs: map[string]string{
		"Arn":    fmt.Sprintf("arn:aws:iam::%s:role/%s", r.opts.AccountID, name),
		"RoleId": "AROA" + name,
	}}, nil
}

func buildRole(b *builder, in resourceInput) error {
	var p struct {
		RoleName                 string
		Description              string
		AssumeRolePolicyDocument json.RawMessage
		ManagedPolicyArns        []string
		Policies                 []RolePolicy
		Path                     ignored
		MaxSessionDuration       ignored
		PermissionsBoundary      ignored
		Tags                     ignored
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	b.stack.Roles = append(b.stack.Roles, Role{
		Source:                   in.id,
		Name:                     in.refs.ref,
		ARN:                      in.refs.attrs["Arn"],
		AssumeRolePolicyDocument: p.AssumeRolePolicyDocument,
		ManagedPolicyARNs:        p.ManagedPolicyArns,
		Policies:                 p.Policies,
	})
	return nil
}

func buildBucketPolicy(b *builder, in resourceInput) error {
	var p struct {
		Bucket         string
		PolicyDocument json.RawMessage
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	b.stack.BucketPolicies = append(b.stack.BucketPolicies, BucketPolicy{Source: in.id, Bucket: p.Bucket, PolicyDocument: p.PolicyDocument})
	return nil
}

func buildDashboard(b *builder, in resourceInput) error {
	var p struct {
		DashboardName string
		DashboardBody string
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if !json.Valid([]byte(p.DashboardBody)) {
		return fmt.Errorf("DashboardBody: not JSON")
	}
	b.stack.Dashboards = append(b.stack.Dashboards, Dashboard{Source: in.id, Name: in.refs.ref, Body: p.DashboardBody})
	return nil
}
