package adversary

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/invoke"
)

// The same seed with the same calls makes the same decisions; another seed
// makes others.
func TestTheSeedDecides(t *testing.T) {
	t.Parallel()
	decisions := func(seed uint64) []bool {
		a := New(seed)
		require.NoError(t, a.Set("sqs.redeliver=0.3,ddb.stale_read=0.5", 0))
		var out []bool
		for range 500 {
			out = append(out, a.Decide(SQSRedeliver), a.Decide(DDBStaleRead))
		}
		return out
	}
	first := decisions(42)
	require.Equal(t, first, decisions(42))
	require.NotEqual(t, first, decisions(43))
	fired := 0
	for i := 0; i < len(first); i += 2 {
		if first[i] {
			fired++
		}
	}
	require.InDelta(t, 150, fired, 40, "about 30 %% of 500 draws at rate 0.3")
}

// Every behaviour with a rate shows in any run, whatever the seed: its first
// decision since Set fires, the later ones at the rate.
func TestTheFirstDecisionFires(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 200; seed++ {
		a := New(seed)
		require.NoError(t, a.Set("aws,sqs.reorder=0", 0))
		for _, b := range Behaviours {
			if b == SQSReorder {
				require.False(t, a.Decide(b), "a rate of 0 never fires")
				continue
			}
			require.True(t, a.Decide(b), "seed %d: the first decision of %s fires", seed, b)
		}
		fired := 0
		for range 100 {
			if a.Decide(SFNTaskRerun) {
				fired++
			}
		}
		require.Less(t, fired, 30, "seed %d: after the first, sfn.task_rerun fires at its rate (5 %%)", seed)
		require.NoError(t, a.Set("aws", 0))
		require.True(t, a.Decide(SFNTaskRerun), "seed %d: Set starts the run again", seed)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	rates, err := Parse("aws,sqs.redeliver=0.5")
	require.NoError(t, err)
	require.Equal(t, 0.5, rates[SQSRedeliver])
	require.Equal(t, Profiles["aws"][DDBStaleRead], rates[DDBStaleRead])
	for _, b := range Behaviours {
		require.Greater(t, Profiles["aws"][b], 0.0, "the aws profile has every behaviour: %s", b)
		require.Greater(t, Profiles["heavy"][b], Profiles["aws"][b], "heavy is heavier than aws: %s", b)
		require.NotEmpty(t, Doc[b], "every behaviour names its AWS page: %s", b)
	}
	off, err := Parse("off")
	require.NoError(t, err)
	require.Empty(t, off)
	for _, bad := range []string{"cruel", "sqs.redeliver=2", "sqs.lost=0.1", "sqs.redeliver=x", "sqs.redeliver=0.1,aws"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
	}
}

// Off by default: a new adversary decides nothing and its handler passes
// calls through untouched.
func TestOffByDefault(t *testing.T) {
	t.Parallel()
	a := New(7)
	require.False(t, a.On())
	for _, b := range Behaviours {
		require.False(t, a.Decide(b))
	}
	require.NoError(t, a.Set("any.lost_answer=1", 0))
	require.True(t, a.On())
	require.NoError(t, a.Set("", 0))
	require.False(t, a.On())
}

// The control sets the rates and the seed at run time and says what was
// done.
func TestControl(t *testing.T) {
	t.Parallel()
	a := New(1)
	h := a.Control()
	put := httptest.NewRecorder()
	h.ServeHTTP(put, httptest.NewRequest(http.MethodPut, "/_club/adversary", strings.NewReader(`{"spec":"heavy","seed":99}`)))
	require.Equal(t, http.StatusOK, put.Code, put.Body.String())
	var s Stats
	require.NoError(t, json.Unmarshal(put.Body.Bytes(), &s))
	require.True(t, s.On)
	require.Equal(t, "99", s.Seed)
	require.Equal(t, "0.2", s.Rates[SQSRedeliver])

	bad := httptest.NewRecorder()
	h.ServeHTTP(bad, httptest.NewRequest(http.MethodPut, "/_club/adversary", strings.NewReader(`{"spec":"sqs.redeliver=3"}`)))
	require.Equal(t, http.StatusBadRequest, bad.Code)
	require.True(t, a.On(), "a refused setting changes nothing")

	del := httptest.NewRecorder()
	h.ServeHTTP(del, httptest.NewRequest(http.MethodDelete, "/_club/adversary", nil))
	require.Equal(t, http.StatusOK, del.Code)
	require.False(t, a.On())
}

type countingInvoker struct{ calls []string }

func (c *countingInvoker) Invoke(_ context.Context, fn string, payload []byte) (invoke.Result, error) {
	c.calls = append(c.calls, fn+":"+string(payload))
	return invoke.Result{Payload: []byte(`{}`)}, nil
}

// At rate 1 every deliverer's invocation is made twice with the same event;
// at rate 0, once.
func TestInvokerRepeatsTheEvent(t *testing.T) {
	t.Parallel()
	for _, b := range []Behaviour{LambdaRedeliver, LambdaAsyncRetry, SFNTaskRerun} {
		a := New(3)
		inner := &countingInvoker{}
		inv := a.Invoker(inner, b)
		_, err := inv.Invoke(t.Context(), "fn", []byte(`{"n":1}`))
		require.NoError(t, err)
		require.Len(t, inner.calls, 1, "off: once")

		require.NoError(t, a.Set(string(b)+"=1", 0))
		_, err = inv.Invoke(t.Context(), "fn", []byte(`{"n":2}`))
		require.NoError(t, err)
		require.Equal(t, []string{`fn:{"n":1}`, `fn:{"n":2}`, `fn:{"n":2}`}, inner.calls, string(b))
		require.EqualValues(t, 1, a.Stats().Counts[b])
	}
}
