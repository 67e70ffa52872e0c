package planted

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanted(t *testing.T) {
	var cond func() bool
	deadline := time.Now().Add(10 * time.Second)
	_ = deadline
	_ = time.Now().Add(2 * time.Minute)                // long enough
	_ = time.Now().Add(-30 * time.Second)              // the past: not a deadline
	_ = time.Now().Add(time.Duration(n) * time.Second) // computed at run time
	_ = time.Now().Add(wait)                           // a variable

	require.Eventually(t, cond, 5*time.Second, time.Millisecond)
	assert.Eventually(t, cond, 30*time.Second, time.Millisecond)
	require.EventuallyWithT(t, func(c *assert.CollectT) {}, 59*time.Second, time.Millisecond)
	require.Eventually(t, cond, time.Minute, time.Millisecond)
	r := require.New(t)
	r.Eventually(cond, 3*time.Minute, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = ctx
	<-time.After(1500 * time.Millisecond)
	_, _ = context.WithTimeout(ctx, 50*time.Millisecond) // patience:exempt the caller's own timeout is what is tested
	_ = time.NewTimer(waitFor)
	_ = time.After(0)
	_ = time.Now().Add(time.Second / 2)
}

const waitFor = 10 * time.Second

var n = 3
var wait time.Duration
