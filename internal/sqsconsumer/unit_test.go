package sqsconsumer_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

func newUnit(t *testing.T, cfg sqsconsumer.Config) (*sqsconsumer.Consumer, *sqsconsumertest.SQS) {
	t.Helper()
	fake := &sqsconsumertest.SQS{}
	cfg.Name = "unit"
	cfg.QueueURL = "http://sqs.local/000000000000/q"
	cfg.DLQURL = "http://sqs.local/000000000000/q-dlq"
	cfg.Metrics = io.Discard
	c, err := sqsconsumer.New(cfg, fake, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return c, fake
}

// record builds a delivered message, in a FIFO message group if group is set.
func record(id string, receiveCount int, group string) lambdaevents.SQSMessage {
	r := sqsconsumertest.Record(id, "body-"+id, receiveCount, time.Now(), nil)
	if group != "" {
		r.Attributes["MessageGroupId"] = group
	}
	return r
}

func noJitter(time.Duration) time.Duration { return 0 }
