// Package engine starts the emulators that can serve the local cloud's data
// plane: kumo, in process, and moto's server, as a supervised child process.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/clubdev/club/localcloud/freeport"
)

// The engines that can serve the data plane (DynamoDB, SQS, SNS, S3, SSM)
// behind the local cloud's front. Lambda, the event source mappings,
// DynamoDB stream records (for kumo), Step Functions, the HTTP API and
// schedules are the local cloud's own whichever engine runs.
const (
	// Kumo is kumo, in process: fast, and the default.
	Kumo = "kumo"
	// Moto is moto's server (python3 -m moto.server) as a child process: a
	// second, independently written opinion on AWS behaviour, slower and
	// not safe under concurrent writes, so the front hands it one request at
	// a time. Its DynamoDB stream records are the ones the mappings deliver.
	Moto = "moto"
)

// Names lists the engine names.
var Names = []string{Kumo, Moto}

// KumoServices are the services kumo serves beside moto (by SigV4 service
// name). Lambda: moto's would run the functions in Docker and poll their
// queues itself, whereas the functions and mappings are the local cloud's
// (kumo keeps their control plane, as when it is the engine). CloudWatch
// ("monitoring"): the SDK speaks its RPC v2 CBOR protocol, which moto 5.2
// does not.
var KumoServices = []string{"lambda", "monitoring"}

// MotoOptions configures StartMoto.
type MotoOptions struct {
	// Python is the interpreter (default: python3 on PATH).
	Python string
	// LogFile receives moto's output (default: discarded).
	LogFile string
	// Logger reports an unexpected exit of the server.
	Logger *slog.Logger
	// AccountID is the account moto puts in ARNs (default 000000000000,
	// the local cloud's).
	AccountID string
	// StartTimeout bounds the wait for the server to answer (default 60 s:
	// importing moto takes seconds on a small machine).
	StartTimeout time.Duration
}

// MotoServer is a moto server running as a child process on a free loopback
// port. It is stopped with the process that started it, even one killed
// with SIGKILL (the child's parent-death signal).
type MotoServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the exit, once done is closed

	closeOnce sync.Once
	closing   chan struct{}
}

// StartMoto starts `python3 -m moto.server` on a free loopback port and
// returns once it answers. A missing python3 or moto stops it with a message
// that says what to install.
func StartMoto(ctx context.Context, o MotoOptions) (*MotoServer, error) {
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	py, err := exec.LookPath(o.Python)
	if err != nil {
		return nil, fmt.Errorf("engine moto needs %s on PATH (with moto's server: pip install 'moto[server]'): %w", o.Python, err)
	}
	if out, err := exec.CommandContext(ctx, py, "-c", "import moto.server").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("engine moto: %s cannot import moto.server (install it: pip install 'moto[server]'): %w: %s",
			py, err, strings.TrimSpace(lastLine(string(out))))
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("engine moto: %w", err)
	}
	cmd := exec.Command(py, "-m", "moto.server", "-H", "127.0.0.1", "-p", port)
	// The local cloud's account, so that ARNs from moto match the template's.
	cmd.Env = append(os.Environ(), "MOTO_ACCOUNT_ID="+o.AccountID, "PYTHONUNBUFFERED=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if o.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("engine moto: %w", err)
		}
		f, err := os.Create(o.LogFile)
		if err != nil {
			return nil, fmt.Errorf("engine moto: %w", err)
		}
		defer f.Close() // the child keeps its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("engine moto: start %s -m moto.server: %w", py, err)
	}
	m := &MotoServer{url: "http://127.0.0.1:" + port, cmd: cmd, done: make(chan struct{}), closing: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.done)
		select {
		case <-m.closing:
		default:
			o.Logger.Error("the moto engine exited while the local cloud runs: AWS calls will fail",
				"err", m.err, "log", o.LogFile)
		}
	}()
	if err := m.waitReady(ctx, o.StartTimeout); err != nil {
		_ = m.Close()
		return nil, fmt.Errorf("engine moto: %w (see %s)", err, o.LogFile)
	}
	return m, nil
}

// waitReady waits for the server to answer its own API.
func (m *MotoServer) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url+"/moto-api/data.json", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-m.done:
			return fmt.Errorf("moto.server exited at start: %v", m.err)
		case <-ctx.Done():
			return fmt.Errorf("moto.server did not answer on %s within %s", m.url, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URL is where the server answers.
func (m *MotoServer) URL() string { return m.url }

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (m *MotoServer) Close() error {
	m.closeOnce.Do(func() {
		close(m.closing)
		pgid := -m.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-m.done
		}
	})
	return nil
}

// freePort returns a loopback port nobody listens on now.
func freePort() (string, error) {
	addr, err := freeport.Addr()
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
