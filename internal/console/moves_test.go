package console

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// blockingSource plans redrives that move one message, then wait to be
// cancelled.
type blockingSource struct {
	fakeSource
	moving chan struct{}
}

func (b *blockingSource) PlanRedrive(context.Context, RedriveRequest) (RedrivePlan, error) {
	return RedrivePlan{Queue: "NotificationsQueue", DLQ: "NotificationsDLQ", ToMove: 5, Run: func(ctx context.Context, progress func(int)) (int, error) {
		progress(1)
		close(b.moving)
		<-ctx.Done()
		return 1, ctx.Err()
	}}, nil
}

// A redrive is an SQS message-move task: RUNNING with its progress, one at a
// time per queue, CANCELLING then CANCELLED with what it moved.
func TestRedriveRunsAsAMessageMoveTask(t *testing.T) {
	t.Parallel()
	src := &blockingSource{moving: make(chan struct{})}
	c, err := New(src, Options{AllowActions: true, By: "ops-ada"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	body := `{"max":5,"rate_per_second":2,"reason":"provider back"}`

	rec := do(c, http.MethodPost, "/api/dlqs/notifications/redrive", c.Token(), body)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	var m move
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &m))
	require.Equal(t, moveRunning, m.Status)
	require.Equal(t, "ops-ada", m.By)
	<-src.moving

	rec = do(c, http.MethodPost, "/api/dlqs/notifications/redrive", c.Token(), body)
	require.Equal(t, http.StatusConflict, rec.Code)
	require.Equal(t, CodeConflict, code(t, rec), "one move per queue at a time")

	get := func() move {
		var got move
		require.NoError(t, json.Unmarshal(do(c, http.MethodGet, "/api/redrives/"+m.ID, "", "").Body.Bytes(), &got))
		return got
	}
	require.Equal(t, 1, get().Moved)
	require.Equal(t, 5, get().ToMove)

	rec = do(c, http.MethodPost, "/api/redrives/"+m.ID+"/cancel", c.Token(), `{}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	require.Eventually(t, func() bool { return get().Status == moveCancelled }, patience.Wait(), 5*time.Millisecond)
	done := get()
	require.Equal(t, 1, done.Moved)
	require.NotNil(t, done.Finished)

	rec = do(c, http.MethodPost, "/api/redrives/"+m.ID+"/cancel", c.Token(), `{}`)
	require.Equal(t, http.StatusConflict, rec.Code, "a finished move cannot be cancelled")
}
