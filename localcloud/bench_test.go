package localcloud_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// BenchmarkSQSDeliveryAtIdle measures how long a message sent to an idle
// queue takes to reach its function: from before SendMessage to the moment
// the handler starts on it (the parity worker records that instant).
// Target (docs/local-cloud.md): p50 ≤ 50 ms.
func BenchmarkSQSDeliveryAtIdle(b *testing.B) {
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		sent := time.Now()
		out, err := env.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(env.stack.Queues["WorkQueue"]), MessageBody: aws.String("bench"),
		})
		require.NoError(b, err)
		var start int64
		deadline := patience.Deadline()
		for start == 0 {
			require.True(b, time.Now().Before(deadline), "message not delivered")
			if rows := seen(b, "done#"+*out.MessageId); len(rows) == 1 {
				start, _ = strconv.ParseInt(rows[0]["start"], 10, 64)
			} else {
				time.Sleep(5 * time.Millisecond)
			}
		}
		lat = append(lat, time.UnixMicro(start).Sub(sent))
		// Let the mapping go idle again: its poller is back in a long poll.
		time.Sleep(200 * time.Millisecond)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkStartToHealthy starts club-local as a separate process on the
// parity template with a warm build cache and reports the time until
// /healthz answers 200 and the resident memory of the whole local stack
// (club-local and every function process) once idle.
// Targets: ≤ 15 s to healthy, ≤ 1 GiB idle.
func BenchmarkStartToHealthy(b *testing.B) {
	root := moduleRoot()
	bin := filepath.Join(b.TempDir(), "club-local")
	build := exec.Command("go", "build", "-o", bin, "./cmd/club-local")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(b, err, string(out))
	state := b.TempDir()

	var total time.Duration
	var rss int64
	for i := 0; i < b.N; i++ {
		api := freeAddr()
		cmd := exec.Command(bin, "--template", "localcloud/testdata/parity/template.yaml", "--state-dir", state,
			"--endpoint", freeAddr(), "--api", api, "--no-sandboxes", "--quiet")
		cmd.Dir = root
		began := time.Now()
		require.NoError(b, cmd.Start())
		deadline := began.Add(2 * time.Minute)
		for {
			resp, err := http.Get("http://" + api + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			require.True(b, time.Now().Before(deadline), "club-local did not become healthy")
			time.Sleep(20 * time.Millisecond)
		}
		total += time.Since(began)
		time.Sleep(2 * time.Second) // idle
		rss = max(rss, treeRSS(cmd.Process.Pid))
		require.NoError(b, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(b, cmd.Wait())
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-healthy")
	b.ReportMetric(float64(rss)/(1<<20), "idle-rss-MiB")
}

// treeRSS sums VmRSS of pid and its descendants (Linux /proc).
func treeRSS(pid int) int64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	var sum int64
	var walk func(int)
	walk = func(p int) {
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "status"))
		if err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					sum += kb * 1024
				}
			}
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return sum
}
