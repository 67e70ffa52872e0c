package persist_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
)

// items is how many DynamoDB items the state directory holds.
const items = 100_000

var reportPath = flag.String("club.report", "", "write the result as a section of this Markdown file (relative to the module root), e.g. docs/benchmarks.md")

func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above")
		dir = parent
	}
}

func freeAddr(t testing.TB) string {
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

// proc is one club-local process.
type proc struct {
	cmd    *exec.Cmd
	exited chan error
	api    string
	ready  time.Duration // from exec to the first 200 of /healthz
	rssKiB int64         // VmRSS of club-local (functions not included) when healthy
}

func startClubLocal(b *testing.B, bin, root, state string, flags ...string) *proc {
	b.Helper()
	api := freeAddr(b)
	args := append([]string{"--state-dir", state, "--endpoint", freeAddr(b), "--api", api,
		"--mail", freeAddr(b), "--payment", freeAddr(b), "--quiet"}, flags...)
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1), api: api}
	p.cmd.Dir = root
	var stderr strings.Builder
	var mu sync.Mutex
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(b) })
	begin := time.Now()
	require.NoError(b, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	b.Cleanup(func() { _ = p.cmd.Process.Kill() })
	deadline := time.Now().Add(20 * time.Minute)
	for {
		resp, err := http.Get("http://" + api + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-p.exited:
			mu.Lock()
			defer mu.Unlock()
			b.Fatalf("club-local exited: %v\n%s", err, stderr.String())
		default:
		}
		require.True(b, time.Now().Before(deadline), "club-local not healthy")
		time.Sleep(10 * time.Millisecond)
	}
	p.ready = time.Since(begin)
	p.rssKiB = rss(b, p.cmd.Process.Pid)
	return p
}

func (p *proc) interrupt(b *testing.B) {
	b.Helper()
	require.NoError(b, p.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-p.exited:
		require.NoError(b, err)
	case <-time.After(2 * time.Minute):
		b.Fatal("club-local did not stop")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// rss reads a process's resident set in KiB.
func rss(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(b, err)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// load writes n items of about 200 bytes into the club table, 25 a call,
// eight callers at once.
func load(b *testing.B, endpoint, table string, n int) {
	client := dynamodb.NewFromConfig(localcloud.AWSConfig(endpoint))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	batches := make(chan int)
	for range 8 {
		wg.Go(func() {
			for first := range batches {
				var reqs []ddbtypes.WriteRequest
				for i := first; i < min(first+25, n); i++ {
					reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{
						"pk":    &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("BENCH#%06d", i)},
						"sk":    &ddbtypes.AttributeValueMemberS{Value: "ITEM"},
						"title": &ddbtypes.AttributeValueMemberS{Value: "an item the local cloud keeps across restarts"},
						"n":     &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(i)},
						"note":  &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("x", 64)},
					}}})
				}
				for len(reqs) > 0 {
					out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{
						RequestItems: map[string][]ddbtypes.WriteRequest{table: reqs}})
					if err != nil {
						errs <- err
						return
					}
					reqs = out.UnprocessedItems[table]
				}
			}
		})
	}
	for first := 0; first < n; first += 25 {
		batches <- first
	}
	close(batches)
	wg.Wait()
	close(errs)
	require.NoError(b, errors.Join(func() []error {
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		return all
	}()...))
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	require.NoError(b, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	}))
	return n
}

// BenchmarkStartupWith100000Items: start-up to healthy and club-local's
// resident memory with an empty state directory and with one holding
// 100,000 items (target: healthy within 5 s).
func BenchmarkStartupWith100000Items(b *testing.B) {
	loadBefore := loadAverage()
	root := moduleRoot(b)
	bin := filepath.Join(b.TempDir(), "club-local")
	out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "club-local")).CombinedOutput()
	require.NoError(b, err, string(out))
	state := b.TempDir()

	// The first start builds the functions if the cache lacks them; the
	// measured ones reuse them, as every later `make run` does.
	warm := startClubLocal(b, bin, root, state)
	warm.interrupt(b)

	for i := 0; i < b.N; i++ {
		empty := startClubLocal(b, bin, root, state, "--fresh")
		st, err := stackfile.Load(filepath.Join(state, "stack.json"))
		require.NoError(b, err)
		begin := time.Now()
		load(b, st.Endpoint, st.Tables["ClubTable"], items)
		loaded := time.Since(begin)
		empty.interrupt(b)
		size := dirSize(b, filepath.Join(state, "state"))

		full := startClubLocal(b, bin, root, state)
		st, err = stackfile.Load(filepath.Join(state, "stack.json"))
		require.NoError(b, err)
		client := dynamodb.NewFromConfig(localcloud.AWSConfig(st.Endpoint))
		for _, k := range []int{0, items / 2, items - 1} {
			got, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(st.Tables["ClubTable"]),
				Key: map[string]ddbtypes.AttributeValue{
					"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("BENCH#%06d", k)},
					"sk": &ddbtypes.AttributeValueMemberS{Value: "ITEM"},
				}})
			require.NoError(b, err)
			require.NotEmpty(b, got.Item, "item %d is there after the restart", k)
		}
		full.interrupt(b)

		b.ReportMetric(empty.ready.Seconds(), "empty-startup-s")
		b.ReportMetric(float64(empty.rssKiB)/1024, "empty-rss-MiB")
		b.ReportMetric(full.ready.Seconds(), "startup-s")
		b.ReportMetric(float64(full.rssKiB)/1024, "rss-MiB")
		b.ReportMetric(float64(size)/(1<<20), "state-MiB")
		b.ReportMetric(loaded.Seconds(), "load-s")
		if *reportPath != "" {
			path := *reportPath
			if !filepath.IsAbs(path) {
				path = filepath.Join(root, path)
			}
			require.NoError(b, bench.WriteSection(path, "persistence-startup", section(empty, full, size, loaded, loadBefore)))
		}
	}
}

// section is the result as docs/benchmarks.md shows it.
func section(empty, full *proc, size int64, loaded time.Duration, loadBefore string) string {
	verdict := "met"
	if full.ready > 5*time.Second {
		verdict = "not met"
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## 7. Start-up with 100,000 kept items\n\n")
	p("`make run` keeps its data (docs/local-cloud.md). Measured by `bench/persist`, run by itself (`make bench`\n")
	p("does not run it): the built `club-local` is started on a state directory and timed from exec to the first\n")
	p("200 of `GET /healthz` (functions already built, as at every later start); its resident memory (the\n")
	p("`club-local` process, not the function processes) is read then.\n\n")
	p("| | |\n|---|---|\n")
	p("| machine | %s, %d cores, %s |\n", cpuModel(), runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH)
	p("| load average (1 min) before the run | %s (the machine is shared) |\n", loadBefore)
	p("| run | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	p("| reproduce | `go test -run '^$' -bench . -benchtime 1x -timeout 30m ./bench/persist -args -club.report docs/benchmarks.md` |\n\n")
	p("| state directory | start-up to healthy (target ≤ 5 s) | `club-local` RSS when healthy | on disk |\n|---|---|---|---|\n")
	p("| empty (`--fresh`) | %.2f s | %.0f MiB | |\n", empty.ready.Seconds(), float64(empty.rssKiB)/1024)
	p("| 100,000 DynamoDB items (about 200 bytes each) | %.2f s (%s) | %.0f MiB | %.1f MiB |\n\n",
		full.ready.Seconds(), verdict, float64(full.rssKiB)/1024, float64(size)/(1<<20))
	p("Writing the items took %.1f s (`BatchWriteItem`, 25 a call, 8 callers). The memory is kumo's: every item is\n", loaded.Seconds())
	p("held in the process, and its snapshot is read whole at start.\n\n")
	p("What keeping the data costs under load: benchmark 2 run with `-club.persist` against the same run in\n")
	p("memory, section 8.\n")
	return b.String()
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown processor"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown processor"
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(raw))[0]
}
