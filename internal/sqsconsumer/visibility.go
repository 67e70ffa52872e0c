package sqsconsumer

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/obs"
)

// keepInvisible extends the message's visibility every half visibility
// timeout until stop is called. The first extension comes half a timeout
// after the handler started, which assumes the invocation began soon after
// the message was received (no long batching window).
func (c *Consumer) keepInvisible(ctx context.Context, r events.SQSMessage) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.cfg.VisibilityTimeout / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.setVisibility(ctx, r, c.cfg.VisibilityTimeout); err != nil && ctx.Err() == nil {
					c.log.WarnContext(ctx, "could not extend visibility of a message in progress", obs.Err(err))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (c *Consumer) setVisibility(ctx context.Context, r events.SQSMessage, d time.Duration) error {
	_, err := c.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(c.cfg.QueueURL),
		ReceiptHandle:     aws.String(r.ReceiptHandle),
		VisibilityTimeout: int32(wholeSeconds(d)),
	})
	if err != nil {
		return fmt.Errorf("change visibility of message %s to %s: %w", r.MessageId, d, err)
	}
	return nil
}
