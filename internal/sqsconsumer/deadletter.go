package sqsconsumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/internal/obs"
)

// maxReasonBytes bounds the dlq_reason attribute: enough for any error chain
// worth reading, small beside the 256 KiB message limit.
const maxReasonBytes = 2048

// toDeadLetter settles a message whose verdict is a dead letter: it sends
// it to the dead-letter queue, or, if that send fails, retries it after the
// backoff, so that it is not lost and is classified again on its next
// delivery.
func (c *Consumer) toDeadLetter(ctx context.Context, r events.SQSMessage, m Message, v Verdict, err error) outcome {
	if dlqErr := c.deadLetter(ctx, r, m, v.Code, err); dlqErr != nil {
		c.log.ErrorContext(ctx, "dead-letter send failed; message will be retried",
			slog.String("dlq_code", v.Code), obs.Err(errors.Join(err, dlqErr)), slog.Int("receive_count", m.ReceiveCount))
		return outcome{verdict: v, failed: true, retryIn: c.delay(ctx, r, m, Verdict{Action: Retry})}
	}
	c.log.WarnContext(ctx, "message dead-lettered",
		slog.String("dlq_code", v.Code), slog.String("dlq_reason", reason(err)), slog.Int("receive_count", m.ReceiveCount))
	return outcome{verdict: v, deadLettered: true}
}

// deadLetter sends the original message to the DLQ with the reason.
func (c *Consumer) deadLetter(ctx context.Context, r events.SQSMessage, m Message, code string, cause error) error {
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]types.MessageAttributeValue{
		AttrDLQCode:           str(code),
		AttrDLQReason:         str(reason(cause)),
		AttrSourceQueue:       str(c.cfg.QueueURL),
		AttrOriginalMessageID: str(m.ID),
		AttrReceiveCount:      str(strconv.Itoa(m.Attempt)),
	}
	// Keep the original attributes so that a redrive delivers the message
	// as it was (see keptAttributes).
	for _, name := range keptAttributes(r, len(attrs)) {
		if v, ok := copyAttribute(r.MessageAttributes[name]); ok {
			attrs[name] = v
		}
	}

	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.cfg.DLQURL),
		MessageBody:       aws.String(r.Body),
		MessageAttributes: attrs,
	}
	if isFIFO(c.cfg.DLQURL) {
		group := messageGroup(r)
		if group == "" {
			group = "dead-letters"
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(m.ID)
	}
	if _, err := c.sqs.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send message %s to the dead-letter queue: %w", m.ID, err)
	}
	return nil
}

// reason is the dlq_reason text of an error, bounded.
func reason(err error) string {
	if err == nil {
		return ""
	}
	// A provider's error may quote the recipient: dead letters keep no
	// personal data.
	s := obs.RedactText(err.Error())
	if len(s) > maxReasonBytes {
		s = s[:maxReasonBytes-3] + "..."
	}
	return s
}
