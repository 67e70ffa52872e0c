package sqsconsumer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/obs"
)

// toRetry settles a transiently failed message. With a retry budget
// (Config.RetryBudget) it sends a delayed copy and acknowledges the received
// message; otherwise, or if that send fails, it reports the message failed
// and sets its visibility to the delay, so that it comes back after it.
func (c *Consumer) toRetry(ctx context.Context, r events.SQSMessage, m Message, v Verdict, err error) outcome {
	if c.cfg.RetryBudget > 0 {
		d := c.retryDelay(m, v)
		sendErr := c.requeue(ctx, r, m, d, err)
		if sendErr == nil {
			c.log.WarnContext(ctx, "message will be retried",
				obs.Err(err), slog.Int("attempt", m.Attempt), slog.Duration("retry_in", d), slog.Time("retry_deadline", m.Deadline))
			return outcome{verdict: v, requeued: true, retryIn: d}
		}
		// Not lost: the received message comes back after its visibility
		// timeout instead, and counts one more receive.
		c.log.WarnContext(ctx, "could not send the retry's copy; retrying the received message", obs.Err(sendErr))
	}
	o := outcome{verdict: v, failed: true, retryIn: c.delay(ctx, r, m, v)}
	c.log.WarnContext(ctx, "message will be retried",
		obs.Err(err), slog.Int("receive_count", m.ReceiveCount), slog.Duration("retry_in", o.retryIn))
	return o
}

// requeue sends the copy of a message that carries its retry (see
// Config.RetryBudget): the same body and attributes, the deadline and the
// deliveries so far, the tag err asks for (Tag), visible after d.
func (c *Consumer) requeue(ctx context.Context, r events.SQSMessage, m Message, d time.Duration, err error) error {
	attrs := retryAttributes(r, m, err)
	_, sendErr := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.cfg.QueueURL),
		MessageBody:       aws.String(r.Body),
		MessageAttributes: attrs,
		DelaySeconds:      int32(min(wholeSeconds(d), int64(maxDelay/time.Second))),
	})
	if sendErr != nil {
		return fmt.Errorf("send the retry of message %s: %w", m.ID, sendErr)
	}
	return nil
}
