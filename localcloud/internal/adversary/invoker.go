package adversary

import (
	"context"

	"github.com/clubdev/club/localcloud/invoke"
)

// Invoker wraps what a deliverer calls functions with: after an invocation
// was made, the behaviour b (LambdaRedeliver for event source mappings,
// LambdaAsyncRetry for schedules, SFNTaskRerun for Step Functions tasks)
// invokes the function again with the same event, and the deliverer acts on
// the second result, as when AWS retries a batch or an event whose first
// result it did not record.
func (a *Adversary) Invoker(inner invoke.Invoker, b Behaviour) invoke.Invoker {
	return invoker{a: a, inner: inner, b: b}
}

type invoker struct {
	a     *Adversary
	inner invoke.Invoker
	b     Behaviour
}

func (i invoker) Invoke(ctx context.Context, function string, payload []byte) (invoke.Result, error) {
	res, err := i.inner.Invoke(ctx, function, payload)
	if err != nil || !i.a.Decide(i.b) {
		return res, err
	}
	i.a.Count(i.b)
	return i.inner.Invoke(ctx, function, payload)
}
