package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// TypeAttribute is the message attribute the relay sets to the event type,
// and on which the subscriptions filter.
const TypeAttribute = "type"

// SNS is the part of *sns.Client that FindSubscription uses.
type SNS interface {
	ListSubscriptionsByTopic(ctx context.Context, in *sns.ListSubscriptionsByTopicInput, opts ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error)
	GetSubscriptionAttributes(ctx context.Context, in *sns.GetSubscriptionAttributesInput, opts ...func(*sns.Options)) (*sns.GetSubscriptionAttributesOutput, error)
}

var _ SNS = (*sns.Client)(nil)

// Subscription is how a consumer's queue is fed from a topic.
type Subscription struct {
	ARN          string
	TopicARN     string
	FilterPolicy string // empty: every message
	Raw          bool   // RawMessageDelivery: the body is the message itself
}

// ErrNoSubscription is returned (wrapped) by FindSubscription when no topic
// feeds the queue.
var ErrNoSubscription = errors.New("no subscription feeds the queue")

// FindSubscription finds the subscription of one of topics whose endpoint
// is queueARN.
func FindSubscription(ctx context.Context, c SNS, topics []string, queueARN string) (Subscription, error) {
	for _, topic := range topics {
		pages := sns.NewListSubscriptionsByTopicPaginator(c, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return Subscription{}, fmt.Errorf("list subscriptions of %s: %w", topic, err)
			}
			for _, s := range page.Subscriptions {
				if aws.ToString(s.Endpoint) != queueARN {
					continue
				}
				arn := aws.ToString(s.SubscriptionArn)
				attrs, err := c.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
				if err != nil {
					return Subscription{}, fmt.Errorf("get attributes of subscription %s: %w", arn, err)
				}
				if scope := attrs.Attributes["FilterPolicyScope"]; scope != "" && scope != "MessageAttributes" {
					return Subscription{}, fmt.Errorf("subscription %s filters on %s, which replay cannot evaluate", arn, scope)
				}
				return Subscription{
					ARN: arn, TopicARN: topic,
					FilterPolicy: attrs.Attributes["FilterPolicy"],
					Raw:          attrs.Attributes["RawMessageDelivery"] == "true",
				}, nil
			}
		}
	}
	return Subscription{}, fmt.Errorf("%w %s", ErrNoSubscription, queueARN)
}

// TypeFilter turns an SNS filter policy into a test of the event type: the
// types the subscription lets through to the consumer. It understands what a
// policy on the type attribute can say: exact strings, "prefix",
// "anything-but" (a string, a list, or a prefix) and "exists". A policy on
// any other attribute is an error: replay knows only the type.
func TypeFilter(policy string) (func(eventType string) bool, error) {
	if strings.TrimSpace(policy) == "" {
		return func(string) bool { return true }, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return nil, fmt.Errorf("filter policy %s: %w", policy, err)
	}
	for key := range doc {
		if key != TypeAttribute {
			return nil, fmt.Errorf("filter policy %s: it filters on %q, and replay knows only the %q attribute", policy, key, TypeAttribute)
		}
	}
	raw, ok := doc[TypeAttribute]
	if !ok {
		return func(string) bool { return true }, nil
	}
	var conditions []json.RawMessage
	if err := json.Unmarshal(raw, &conditions); err != nil {
		return nil, fmt.Errorf("filter policy %s: %q must be a list: %w", policy, TypeAttribute, err)
	}
	var tests []func(string) bool
	for _, c := range conditions {
		test, err := condition(c)
		if err != nil {
			return nil, fmt.Errorf("filter policy %s: %w", policy, err)
		}
		tests = append(tests, test)
	}
	return func(t string) bool {
		for _, test := range tests {
			if test(t) {
				return true
			}
		}
		return false
	}, nil
}

// condition is one element of a policy's list: a string or an operator.
func condition(c json.RawMessage) (func(string) bool, error) {
	var exact string
	if err := json.Unmarshal(c, &exact); err == nil {
		return func(t string) bool { return t == exact }, nil
	}
	var op map[string]json.RawMessage
	if err := json.Unmarshal(c, &op); err != nil || len(op) != 1 {
		return nil, fmt.Errorf("condition %s: want a string or one operator", c)
	}
	name := slices.Collect(maps.Keys(op))[0]
	arg := op[name]
	switch name {
	case "prefix":
		var p string
		if err := json.Unmarshal(arg, &p); err != nil {
			return nil, fmt.Errorf("condition %s: prefix must be a string", c)
		}
		return func(t string) bool { return strings.HasPrefix(t, p) }, nil
	case "exists":
		var e bool
		if err := json.Unmarshal(arg, &e); err != nil {
			return nil, fmt.Errorf("condition %s: exists must be true or false", c)
		}
		return func(string) bool { return e }, nil // every event has a type
	case "anything-but":
		inner, err := anythingBut(arg)
		if err != nil {
			return nil, fmt.Errorf("condition %s: %w", c, err)
		}
		return func(t string) bool { return !inner(t) }, nil
	}
	return nil, fmt.Errorf("condition %s: operator %q is not one replay understands", c, name)
}

func anythingBut(arg json.RawMessage) (func(string) bool, error) {
	var one string
	if err := json.Unmarshal(arg, &one); err == nil {
		return func(t string) bool { return t == one }, nil
	}
	var many []string
	if err := json.Unmarshal(arg, &many); err == nil {
		return func(t string) bool { return slices.Contains(many, t) }, nil
	}
	var op struct {
		Prefix *string `json:"prefix"`
	}
	if err := json.Unmarshal(arg, &op); err == nil && op.Prefix != nil {
		return func(t string) bool { return strings.HasPrefix(t, *op.Prefix) }, nil
	}
	return nil, errors.New("anything-but must be a string, a list of strings or a prefix")
}
