package sqsconsumer

import (
	"cmp"
	"maps"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxMessageAttributes is SQS's limit of message attributes per message.
const maxMessageAttributes = 10

// keptAttributes names the original attributes of r a dead letter or a
// retry's copy keeps beside its own ones (of which there are taken): type
// and event_id first, then the others by name, within SQS's limit of 10
// per message, never the retry's own attributes (a redrive starts a fresh
// budget).
func keptAttributes(r events.SQSMessage, taken int) []string {
	names := slices.Sorted(maps.Keys(r.MessageAttributes))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(keepRank(a), keepRank(b)) })
	var out []string
	for _, name := range names {
		if taken+len(out) == maxMessageAttributes {
			break
		}
		if ourAttribute(name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// ourAttribute reports whether an attribute is one the consumer sets on a
// dead letter or a retry's copy.
func ourAttribute(name string) bool {
	switch name {
	case AttrDLQCode, AttrDLQReason, AttrSourceQueue, AttrOriginalMessageID, AttrReceiveCount, AttrRetryDeadline, AttrRetryAttempt:
		return true
	}
	return false
}

// keepRank orders the original attributes to keep on a dead letter.
func keepRank(name string) int {
	switch name {
	case AttrType:
		return 0
	case AttrEventID:
		return 1
	default:
		return 2
	}
}

// copyAttribute converts a delivered attribute back into one to send.
func copyAttribute(a events.SQSMessageAttribute) (types.MessageAttributeValue, bool) {
	switch {
	case a.DataType == "":
		return types.MessageAttributeValue{}, false
	case a.StringValue != nil:
		return types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue}, true
	case a.BinaryValue != nil:
		return types.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}, true
	default:
		return types.MessageAttributeValue{}, false
	}
}
