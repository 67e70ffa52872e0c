package adversary

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clubdev/club/localcloud/invoke"
)

// With the adversary off a call costs one atomic load more than without it
// (must-show 4: throughput unchanged). Compare with BenchmarkWithoutAdversary.
func BenchmarkOffHandler(b *testing.B) {
	h := New(1).Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), nil)
	benchmarkCall(b, h)
}

func BenchmarkWithoutAdversary(b *testing.B) {
	benchmarkCall(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
}

func benchmarkCall(b *testing.B, h http.Handler) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"TableName":"t"}`))
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	w := httptest.NewRecorder()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

func BenchmarkOffInvoker(b *testing.B) {
	var direct nopInvoker
	inv := New(1).Invoker(direct, LambdaRedeliver)
	for b.Loop() {
		_, _ = inv.Invoke(b.Context(), "fn", nil)
	}
}

type nopInvoker struct{}

func (nopInvoker) Invoke(context.Context, string, []byte) (invoke.Result, error) {
	return invoke.Result{}, nil
}
