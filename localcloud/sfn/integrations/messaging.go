package integrations

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/localcloud/sfn"
)

// SQSAPI is the part of the SQS client the integration calls.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SNSAPI is the part of the SNS client the integration calls.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, opts ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var (
	_ SQSAPI = (*sqs.Client)(nil)
	_ SNSAPI = (*sns.Client)(nil)
)

// Resources of the SQS and SNS integrations.
const (
	SQSSendMessage = "arn:aws:states:::sqs:sendMessage"
	SNSPublish     = "arn:aws:states:::sns:publish"
)

// messageAttribute is the JSON shape of an SQS or SNS message attribute.
type messageAttribute struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue"`
	BinaryValue string `json:"BinaryValue"` // base64
}

func (a messageAttribute) binary() ([]byte, error) {
	if a.BinaryValue == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(a.BinaryValue)
	if err != nil {
		return nil, runtimeError("BinaryValue must be base64: %v", err)
	}
	return b, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SQS runs the optimized SQS integration.
type SQS struct {
	client SQSAPI
}

var (
	_ sfn.TaskHandler      = (*SQS)(nil)
	_ sfn.ParameterChecker = (*SQS)(nil)
)

// NewSQS returns the SQS integration.
func NewSQS(c SQSAPI) *SQS { return &SQS{client: c} }

// Register adds sqs:sendMessage and its callback form.
func (q *SQS) Register(r *sfn.Resources) {
	r.Handle(SQSSendMessage, q)
	r.Handle(SQSSendMessage+sfn.CallbackSuffix, q)
}

// CheckParameters validates the SendMessage request fields.
func (q *SQS) CheckParameters(resource string, fields []string) error {
	return checkFields(resource, fields,
		[]string{"QueueUrl", "MessageBody", "DelaySeconds", "MessageAttributes", "MessageDeduplicationId", "MessageGroupId"},
		[]string{"QueueUrl", "MessageBody"})
}

// RunTask sends the message.
func (q *SQS) RunTask(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
	var in struct {
		QueueUrl               string                      `json:"QueueUrl"`
		MessageBody            json.RawMessage             `json:"MessageBody"`
		DelaySeconds           int32                       `json:"DelaySeconds"`
		MessageAttributes      map[string]messageAttribute `json:"MessageAttributes"`
		MessageDeduplicationId string                      `json:"MessageDeduplicationId"`
		MessageGroupId         string                      `json:"MessageGroupId"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, runtimeError("cannot decode the SQS SendMessage parameters: %v", err)
	}
	attrs := map[string]sqstypes.MessageAttributeValue{}
	for name, a := range in.MessageAttributes {
		b, err := a.binary()
		if err != nil {
			return nil, err
		}
		attrs[name] = sqstypes.MessageAttributeValue{DataType: optional(a.DataType), StringValue: optional(a.StringValue), BinaryValue: b}
	}
	body := textOf(in.MessageBody)
	out, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: &in.QueueUrl, MessageBody: &body, DelaySeconds: in.DelaySeconds, MessageAttributes: attrs,
		MessageDeduplicationId: optional(in.MessageDeduplicationId), MessageGroupId: optional(in.MessageGroupId),
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, serviceError("SQS", "AmazonSQS", err)
	}
	result := sdkMetadata(out.ResultMetadata)
	result["MessageId"] = out.MessageId
	result["MD5OfMessageBody"] = out.MD5OfMessageBody
	if out.MD5OfMessageAttributes != nil {
		result["MD5OfMessageAttributes"] = out.MD5OfMessageAttributes
	}
	if out.SequenceNumber != nil {
		result["SequenceNumber"] = out.SequenceNumber
	}
	return marshal(result)
}

// SNS runs the optimized SNS integration.
type SNS struct {
	client SNSAPI
}

var (
	_ sfn.TaskHandler      = (*SNS)(nil)
	_ sfn.ParameterChecker = (*SNS)(nil)
)

// NewSNS returns the SNS integration.
func NewSNS(c SNSAPI) *SNS { return &SNS{client: c} }

// Register adds sns:publish and its callback form.
func (s *SNS) Register(r *sfn.Resources) {
	r.Handle(SNSPublish, s)
	r.Handle(SNSPublish+sfn.CallbackSuffix, s)
}

// CheckParameters validates the Publish request fields.
func (s *SNS) CheckParameters(resource string, fields []string) error {
	return checkFields(resource, fields,
		[]string{"TopicArn", "TargetArn", "PhoneNumber", "Message", "Subject", "MessageStructure", "MessageAttributes",
			"MessageDeduplicationId", "MessageGroupId"},
		[]string{"Message"})
}

// RunTask publishes the message.
func (s *SNS) RunTask(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
	var in struct {
		TopicArn               string                      `json:"TopicArn"`
		TargetArn              string                      `json:"TargetArn"`
		PhoneNumber            string                      `json:"PhoneNumber"`
		Message                json.RawMessage             `json:"Message"`
		Subject                string                      `json:"Subject"`
		MessageStructure       string                      `json:"MessageStructure"`
		MessageAttributes      map[string]messageAttribute `json:"MessageAttributes"`
		MessageDeduplicationId string                      `json:"MessageDeduplicationId"`
		MessageGroupId         string                      `json:"MessageGroupId"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, runtimeError("cannot decode the SNS Publish parameters: %v", err)
	}
	attrs := map[string]snstypes.MessageAttributeValue{}
	for name, a := range in.MessageAttributes {
		b, err := a.binary()
		if err != nil {
			return nil, err
		}
		attrs[name] = snstypes.MessageAttributeValue{DataType: optional(a.DataType), StringValue: optional(a.StringValue), BinaryValue: b}
	}
	msg := textOf(in.Message)
	out, err := s.client.Publish(ctx, &sns.PublishInput{
		TopicArn: optional(in.TopicArn), TargetArn: optional(in.TargetArn), PhoneNumber: optional(in.PhoneNumber),
		Message: &msg, Subject: optional(in.Subject), MessageStructure: optional(in.MessageStructure), MessageAttributes: attrs,
		MessageDeduplicationId: optional(in.MessageDeduplicationId), MessageGroupId: optional(in.MessageGroupId),
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, serviceError("SNS", "AmazonSNS", err)
	}
	result := sdkMetadata(out.ResultMetadata)
	result["MessageId"] = out.MessageId
	if out.SequenceNumber != nil {
		result["SequenceNumber"] = out.SequenceNumber
	}
	return marshal(result)
}
