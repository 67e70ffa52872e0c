package sqsconsumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestLongWorkKeepsTheMessageInvisible: while a handler runs past the
// queue's visibility timeout, no other consumer gets the message, and
// without the extension another one would.
func TestLongWorkKeepsTheMessageInvisible(t *testing.T) {
	t.Parallel()
	const visibility = 2 * time.Second
	for _, tt := range []struct {
		name   string
		extend time.Duration
		// wantSeen: another consumer receives the message during the work.
		wantSeen bool
	}{
		{"extended", visibility, false},
		{"not extended", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, sqsconsumer.Config{VisibilityTimeout: tt.extend}, visibility, 5)
			send(t, f.url, envelope(events.NewID(), 1), nil)
			ev := lambdaEvent(receive(t, f.url, 1, 5*time.Second))
			require.Len(t, ev.Records, 1)

			var seen int
			resp := f.consumer.Process(context.Background(), ev, func(context.Context, sqsconsumer.Message) error {
				// The work: 1.5 visibility timeouts, watching the queue.
				seen = len(receiveFor(t, f.url, 1, visibility*3/2))
				return nil
			})
			require.Empty(t, sqsconsumertest.FailedIDs(resp))
			require.Equal(t, tt.wantSeen, seen > 0)
		})
	}
}
