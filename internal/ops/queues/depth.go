package queues

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AttributesAPI is the part of *sqs.Client that GetDepth uses.
type AttributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Depth is how many messages a queue holds, by state. SQS reports all three
// as approximations.
type Depth struct {
	Visible  int64 `json:"visible"`   // ready to be received
	InFlight int64 `json:"in_flight"` // received and not yet deleted (leased)
	Delayed  int64 `json:"delayed"`   // sent with a delay that has not passed
}

// Total is every message the queue still owes work for.
func (d Depth) Total() int64 { return d.Visible + d.InFlight + d.Delayed }

// GetDepth reads a queue's depth.
func GetDepth(ctx context.Context, c AttributesAPI, url string) (Depth, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return Depth{}, fmt.Errorf("get depth of %s: %w", url, err)
	}
	var d Depth
	for name, dst := range map[types.QueueAttributeName]*int64{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
	} {
		v, ok := out.Attributes[string(name)]
		if !ok {
			continue // an emulator that does not report delays: count none
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Depth{}, fmt.Errorf("depth of %s: attribute %s = %q: %w", url, name, v, err)
		}
		*dst = n
	}
	return d, nil
}
