package provision

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/clubdev/club/localcloud/template"
)

type snsAPI interface {
	CreateTopic(context.Context, *sns.CreateTopicInput, ...func(*sns.Options)) (*sns.CreateTopicOutput, error)
	ListSubscriptionsByTopic(context.Context, *sns.ListSubscriptionsByTopicInput, ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error)
	Subscribe(context.Context, *sns.SubscribeInput, ...func(*sns.Options)) (*sns.SubscribeOutput, error)
	SetSubscriptionAttributes(context.Context, *sns.SetSubscriptionAttributesInput, ...func(*sns.Options)) (*sns.SetSubscriptionAttributesOutput, error)
}

// topics creates the topics; CreateTopic is idempotent for a name.
func (p *provisioner) topics(ctx context.Context) error {
	for _, t := range p.st.Topics {
		in := &sns.CreateTopicInput{Name: aws.String(t.Name)}
		if t.FIFO {
			in.Attributes = map[string]string{
				"FifoTopic":                 "true",
				"ContentBasedDeduplication": strconv.FormatBool(t.ContentBasedDeduplication),
			}
		}
		out, err := p.c.sns.CreateTopic(ctx, in)
		if err != nil {
			return resourceError("topic", t.Source, t.Name, err)
		}
		p.result.Topics[t.Source] = aws.ToString(out.TopicArn)
	}
	return nil
}

// subscriptions subscribes each endpoint once. Subscribe is not idempotent
// on the emulator (every call adds a subscription, and so a duplicate
// delivery), so an existing subscription with the same protocol and
// endpoint is updated instead.
func (p *provisioner) subscriptions(ctx context.Context) error {
	for _, s := range p.st.Subscriptions {
		arn, err := p.subscription(ctx, s)
		if err != nil {
			return resourceError("subscription", s.Source, s.Protocol+" "+s.Endpoint, err)
		}
		p.result.Subscriptions[s.Source] = arn
	}
	return nil
}

func (p *provisioner) subscription(ctx context.Context, s template.Subscription) (string, error) {
	existing, err := p.findSubscription(ctx, s)
	if err != nil {
		return "", err
	}
	attrs := subscriptionAttributes(s)
	if existing == "" {
		out, err := p.c.sns.Subscribe(ctx, &sns.SubscribeInput{
			TopicArn:              aws.String(s.TopicARN),
			Protocol:              aws.String(s.Protocol),
			Endpoint:              aws.String(s.Endpoint),
			Attributes:            attrs,
			ReturnSubscriptionArn: true,
		})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.SubscriptionArn), nil
	}
	for name, value := range attrs {
		_, err := p.c.sns.SetSubscriptionAttributes(ctx, &sns.SetSubscriptionAttributesInput{
			SubscriptionArn: aws.String(existing),
			AttributeName:   aws.String(name),
			AttributeValue:  aws.String(value),
		})
		if err != nil {
			return "", fmt.Errorf("set %s: %w", name, err)
		}
	}
	return existing, nil
}

func (p *provisioner) findSubscription(ctx context.Context, s template.Subscription) (string, error) {
	in := &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(s.TopicARN)}
	for {
		out, err := p.c.sns.ListSubscriptionsByTopic(ctx, in)
		if err != nil {
			return "", fmt.Errorf("list subscriptions: %w", err)
		}
		for _, sub := range out.Subscriptions {
			if aws.ToString(sub.Protocol) == s.Protocol && aws.ToString(sub.Endpoint) == s.Endpoint {
				return aws.ToString(sub.SubscriptionArn), nil
			}
		}
		if aws.ToString(out.NextToken) == "" {
			return "", nil
		}
		in.NextToken = out.NextToken
	}
}

// subscriptionAttributes always carries RawMessageDelivery, so that updating
// an existing subscription also turns it off when the template does.
func subscriptionAttributes(s template.Subscription) map[string]string {
	attrs := map[string]string{"RawMessageDelivery": strconv.FormatBool(s.RawMessageDelivery)}
	if s.FilterPolicy != "" {
		attrs["FilterPolicy"] = s.FilterPolicy
		if s.FilterPolicyScope != "" {
			attrs["FilterPolicyScope"] = s.FilterPolicyScope
		}
	}
	if s.RedrivePolicy != "" {
		attrs["RedrivePolicy"] = s.RedrivePolicy
	}
	return attrs
}
