package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/lambdart"
)

// BenchmarkFunctionStart (benchmark 5) builds every function of the
// template as the local cloud does (without the profiling tag) and measures
// its binary and how long it takes from exec to its first poll of the
// Runtime API, with the template's environment.
func BenchmarkFunctionStart(b *testing.B) {
	const starts = 7
	s := product
	dir := b.TempDir()
	var results []bench.FunctionResult
	for i := 0; i < b.N; i++ {
		results = nil
		for _, fn := range s.cloud.Stack().Functions {
			bin := filepath.Join(dir, fn.Source, "bootstrap")
			require.NoError(b, lambdart.Build(context.Background(), lambdart.BuildSpec{
				Name: fn.Source, Dir: fn.CodeDir, ModuleRoot: moduleRoot(), Out: bin,
			}))
			info, err := os.Stat(bin)
			require.NoError(b, err)
			env := []string{
				"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
				"AWS_ENDPOINT_URL=" + s.file.Endpoint, "AWS_LAMBDA_FUNCTION_NAME=" + fn.Name,
				"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
			}
			for k, v := range fn.Environment {
				env = append(env, k+"="+v)
			}
			r := bench.FunctionResult{Name: filepath.Base(fn.CodeDir), SizeBytes: info.Size()}
			for range starts {
				r.StartToFirstPoll = append(r.StartToFirstPoll, startToFirstPoll(b, bin, env))
			}
			results = append(results, r)
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Name < results[j].Name })
	for _, r := range results {
		b.ReportMetric(bench.Percentile(r.StartToFirstPoll, 50).Seconds()*1000, r.Name+"-start-ms")
	}
	report.Functions = results
}

// startToFirstPoll runs bin against a stub Runtime API and returns the time
// from exec to its first GET …/invocation/next; then it stops the process.
func startToFirstPoll(tb testing.TB, bin string, env []string) time.Duration {
	tb.Helper()
	polled := make(chan time.Time, 1)
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			select {
			case polled <- time.Now():
			default:
			}
			<-r.Context().Done() // no invocation: hold the poll
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer stub.Close()
	cmd := exec.Command(bin)
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(stub.URL, "http://"))
	began := time.Now()
	require.NoError(tb, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	select {
	case at := <-polled:
		return at.Sub(began)
	case <-time.After(patience.Wait()):
		tb.Fatalf("%s did not poll the Runtime API within 20 s", bin)
		return 0
	}
}
