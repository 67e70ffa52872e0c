package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfnsdk "github.com/aws/aws-sdk-go-v2/service/sfn"
	sqssdk "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/issuer"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// clubLocal builds the binary once for the tests that drive it as a
// developer does.
func clubLocal(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "club-local-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "club-local")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// addrs are the four addresses of one stack, kept across its restarts as a
// developer's are.
type addrs struct{ endpoint, api, mail, payment string }

func freeAddrs(t *testing.T) addrs {
	return addrs{freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)}
}

// running is one club-local process.
type running struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan error
	stderr *syncBuffer
	state  string
	addrs  addrs
	stack  *stackfile.Stack
}

// start runs club-local on state and a, waits until it is healthy and
// reads its stack file.
func start(t *testing.T, state string, a addrs, flags ...string) *running {
	t.Helper()
	root, err := moduleRoot()
	require.NoError(t, err)
	args := append([]string{"--state-dir", state, "--endpoint", a.endpoint, "--api", a.api,
		"--mail", a.mail, "--payment", a.payment, "--quiet"}, flags...)
	r := &running{t: t, cmd: exec.Command(clubLocal(t), args...), exited: make(chan error, 1), stderr: &syncBuffer{}, state: state, addrs: a}
	r.cmd.Dir = root
	r.cmd.Stderr = r.stderr
	require.NoError(t, r.cmd.Start())
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	waitUntil(t, r.exited, r.stderr, 20*time.Minute, "functions built", func() bool {
		return strings.Contains(r.stderr.String(), "functions built")
	})
	waitUntil(t, r.exited, r.stderr, 3*time.Minute, "healthy", func() bool {
		resp, err := http.Get("http://" + a.api + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	r.stack, err = stackfile.Load(filepath.Join(state, "stack.json"))
	require.NoError(t, err)
	return r
}

// interrupt is Ctrl-C: the process must stop cleanly.
func (r *running) interrupt() {
	r.t.Helper()
	require.NoError(r.t, r.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-r.exited:
		require.NoError(r.t, err, r.stderr.String())
	case <-time.After(60 * time.Second):
		r.t.Fatalf("club-local did not stop after Ctrl-C:\n%s", r.stderr.String())
	}
}

// kill is kill -9, of club-local only: its function processes, in their
// own process groups, go when their parent's pipes close.
func (r *running) kill() {
	r.t.Helper()
	require.NoError(r.t, r.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-r.exited:
	case <-time.After(patience.Wait()):
		r.t.Fatal("club-local survived SIGKILL")
	}
}

// user is a caller of the HTTP API with a token of the local issuer.
type user struct {
	sub, email, token string
}

func (r *running) user(role string) user {
	r.t.Helper()
	iss, err := issuer.Open(r.stack.IssuerURL, filepath.Join(r.state, r.stack.IssuerKeyFile))
	require.NoError(r.t, err)
	sub := fmt.Sprintf("%s-%d", role, time.Now().UnixNano())
	tok, err := iss.Sign(issuer.Claims{Subject: sub, Audience: r.stack.JWTAudience, Email: sub + "@example.com",
		Groups: []string{role}}, 24*time.Hour)
	require.NoError(r.t, err)
	return user{sub: sub, email: sub + "@example.com", token: tok}
}

// reply is an HTTP answer with its JSON body.
type reply struct {
	status int
	body   map[string]any
	raw    []byte
}

func (p reply) str(k string) string { s, _ := p.body[k].(string); return s }

func send(t *testing.T, method, u, token string, body any, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := reply{status: resp.StatusCode, raw: raw}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

func (r *running) api(u user, method, path string, body any, headers ...string) reply {
	r.t.Helper()
	return send(r.t, method, r.stack.APIURL+path, u.token, body, headers...)
}

func (r *running) sandbox(base, method, path string, body any) reply {
	r.t.Helper()
	out := send(r.t, method, base+path, "", body)
	require.Less(r.t, out.status, 300, "%s %s: %s", method, path, out.raw)
	return out
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout = patience.Within(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waited %s for %s", timeout, what)
		time.Sleep(100 * time.Millisecond)
	}
}

// relayStats is the outbox relay's stream mapping in /_club/stats.
type relayStats struct {
	Checkpoint uint64 `json:"checkpoint"`
	Stats      struct {
		Succeeded, Filtered, Discarded uint64
	} `json:"stats"`
}

func (r *running) relay() relayStats {
	r.t.Helper()
	out := send(r.t, http.MethodGet, r.stack.Endpoint+"/_club/stats", "", nil)
	require.Equal(r.t, http.StatusOK, out.status)
	var doc struct {
		Mappings map[string]relayStats `json:"stream_mappings"`
	}
	require.NoError(r.t, json.Unmarshal(out.raw, &doc))
	rs, ok := doc.Mappings["RelayFunction.Outbox"]
	require.True(r.t, ok, "the relay's mapping is in /_club/stats: %s", out.raw)
	return rs
}

func (r *running) mailTo(addr string) []any {
	r.t.Helper()
	out := r.sandbox(r.stack.MailURL, http.MethodGet, "/v1/messages?to="+url.QueryEscape(addr), nil)
	list, _ := out.body["messages"].([]any)
	return list
}

func notification(r reply) (status string, attempts int) {
	n, _ := r.body["notification"].(map[string]any)
	status, _ = n["status"].(string)
	a, _ := n["attempts"].(float64)
	return status, int(a)
}

func statuses(p reply) []string {
	var out []string
	list, _ := p.body["history"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		s, _ := m["status"].(string)
		out = append(out, s)
	}
	return out
}

// TestPersistentCloudKeepsItsDataAcrossARestart is the developer's day:
// a class and an enrollment whose mail is owed through an outage of the
// provider, a purchase waiting for its payment, another whose short hold
// ends while the local cloud is stopped, an SQS message a consumer holds,
// Ctrl-C, start again. Every row and
// its history is there; the owed mail goes out once when the provider
// recovers; the saga, resumed with its task token, completes when the
// payment succeeds; the other saga's wait times out at once and its hold is
// released; the held message comes back when its visibility timeout ends;
// the relay carries on from its checkpoint without publishing anything
// again.
func TestPersistentCloudKeepsItsDataAcrossARestart(t *testing.T) {
	state, a := t.TempDir(), freeAddrs(t)
	first := start(t, state, a)
	teacher, student := first.user("teacher"), first.user("student")

	class := first.api(teacher, http.MethodPost, "/classes", map[string]any{
		"title": "Queues", "capacity": 5, "starts_at": "2030-01-01T17:00:00Z"})
	require.Equal(t, http.StatusCreated, class.status, string(class.raw))
	classID := class.str("class_id")

	first.sandbox(first.stack.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "error"})
	enrolled := first.api(student, http.MethodPost, "/classes/"+classID+"/enrollments", nil, "Idempotency-Key", "enroll-"+student.sub)
	require.Equal(t, http.StatusCreated, enrolled.status, string(enrolled.raw))
	enrollmentID := enrolled.str("enrollment_id")
	eventually(t, 2*time.Minute, "the mail failed at least once in the outage", func() bool {
		st, attempts := notification(first.api(student, http.MethodGet, "/enrollments/"+enrollmentID, nil))
		require.Equal(t, "pending", st)
		return attempts >= 1
	})

	intensive := first.api(teacher, http.MethodPost, "/intensives", map[string]any{
		"title": "Sagas in practice", "capacity": 2,
		"price": map[string]any{"amount_cents": 4900, "currency": "EUR"}, "hold_seconds": 900})
	require.Equal(t, http.StatusCreated, intensive.status, string(intensive.raw))
	intensiveID := intensive.str("intensive_id")
	bought := first.api(student, http.MethodPost, "/intensives/"+intensiveID+"/purchases", nil, "Idempotency-Key", "buy-"+student.sub)
	require.Equal(t, http.StatusAccepted, bought.status, string(bought.raw))
	purchaseID := bought.str("purchase_id")
	var purchase reply
	eventually(t, 2*time.Minute, "the purchase waits for its payment", func() bool {
		purchase = first.api(student, http.MethodGet, "/purchases/"+purchaseID, nil)
		return purchase.str("status") == "payment_pending"
	})
	pay, _ := purchase.body["payment"].(map[string]any)
	paymentID, _ := pay["payment_id"].(string)
	require.NotEmpty(t, paymentID)
	// The saga has stored its task token and waits on it: the relay has
	// finished every record so far.
	eventually(t, time.Minute, "the relay has caught up", func() bool {
		return lagOf(t, send(t, http.MethodGet, first.stack.Endpoint+"/_club/stats", "", nil).raw) == 0
	})
	before := first.relay()

	// A second purchase with a short hold, waiting for its payment when
	// the local cloud stops; its hold ends while it is stopped.
	short := first.api(teacher, http.MethodPost, "/intensives", map[string]any{
		"title": "Short holds", "capacity": 2,
		"price": map[string]any{"amount_cents": 4900, "currency": "EUR"}, "hold_seconds": 8})
	require.Equal(t, http.StatusCreated, short.status, string(short.raw))
	shortBought := first.api(student, http.MethodPost, "/intensives/"+short.str("intensive_id")+"/purchases", nil, "Idempotency-Key", "buy-short-"+student.sub)
	require.Equal(t, http.StatusAccepted, shortBought.status, string(shortBought.raw))
	shortID := shortBought.str("purchase_id")
	holdEnds, err := time.Parse(time.RFC3339Nano, shortBought.str("hold_expires_at"))
	require.NoError(t, err)
	eventually(t, time.Minute, "the short purchase waits for its payment", func() bool {
		p := first.api(student, http.MethodGet, "/purchases/"+shortID, nil)
		require.NotEqual(t, "expired", p.str("status"), "the hold ended before the stop: the machine is too slow for this test")
		return p.str("status") == "payment_pending"
	})
	before = first.relay()

	// A message a consumer holds (received, not deleted) at the stop.
	queues := sqssdk.NewFromConfig(localcloud.AWSConfig(first.stack.Endpoint))
	q, err := queues.CreateQueue(context.Background(), &sqssdk.CreateQueueInput{QueueName: aws.String("restart-probe")})
	require.NoError(t, err)
	_, err = queues.SendMessage(context.Background(), &sqssdk.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("held at the stop")})
	require.NoError(t, err)
	held, err := queues.ReceiveMessage(context.Background(), &sqssdk.ReceiveMessageInput{QueueUrl: q.QueueUrl, VisibilityTimeout: 30, WaitTimeSeconds: 5})
	require.NoError(t, err)
	require.Len(t, held.Messages, 1)
	visibleAgain := time.Now().Add(30 * time.Second) // patience:exempt when the message is due back, not a deadline

	first.interrupt()
	// Stopped until the short hold has ended.
	eventually(t, time.Minute, "the short hold ended while the local cloud was stopped", func() bool {
		return time.Now().After(holdEnds.Add(time.Second))
	})
	for _, f := range []string{"FORMAT", "kumo/dynamodb.json", "kumo/sqs.json", "streams/streams.json", "checkpoints.json",
		"sfn.jsonl", "sandboxes/mail.json", "sandboxes/payment.json"} {
		_, err := os.Stat(filepath.Join(state, "state", f))
		require.NoError(t, err, "the state directory holds %s", f)
	}

	raw, err := os.ReadFile(filepath.Join(state, "state", "checkpoints.json"))
	require.NoError(t, err)
	var kept map[string]uint64
	require.NoError(t, json.Unmarshal(raw, &kept))
	require.GreaterOrEqual(t, kept["RelayFunction.Outbox"], before.Checkpoint, "the relay's checkpoint was kept")

	second := start(t, state, a)
	after := second.relay()
	require.GreaterOrEqual(t, after.Checkpoint, kept["RelayFunction.Outbox"], "the relay starts from its checkpoint")

	got := second.api(teacher, http.MethodGet, "/classes/"+classID, nil)
	require.Equal(t, http.StatusOK, got.status, string(got.raw))
	require.EqualValues(t, 1, got.body["seats_taken"])
	e := second.api(student, http.MethodGet, "/enrollments/"+enrollmentID, nil)
	require.Equal(t, http.StatusOK, e.status, string(e.raw))
	st, attempts := notification(e)
	require.Equal(t, "pending", st, "the outage is still on: the mail is still owed")
	require.GreaterOrEqual(t, attempts, 1)
	p := second.api(student, http.MethodGet, "/purchases/"+purchaseID, nil)
	require.Equal(t, http.StatusOK, p.status, string(p.raw))
	require.Equal(t, "payment_pending", p.str("status"))
	require.Equal(t, []string{"reserved", "payment_pending"}, statuses(p))
	require.Empty(t, second.mailTo(student.email))

	// The saga of the short purchase resumes past its deadline: its wait
	// times out at once, the payment is checked (still pending) and the
	// hold is released.
	var sp reply
	eventually(t, 2*time.Minute, "the short purchase expired after the restart", func() bool {
		sp = second.api(student, http.MethodGet, "/purchases/"+shortID, nil)
		return sp.str("status") == "expired"
	})
	require.Equal(t, []string{"reserved", "payment_pending", "checking_payment", "expired"}, statuses(sp))
	si := second.api(student, http.MethodGet, "/intensives/"+short.str("intensive_id"), nil)
	require.EqualValues(t, 0, si.body["seats_held"], "the hold is released: %s", si.raw)

	// The held message comes back when its visibility timeout ends, not
	// before.
	queues = sqssdk.NewFromConfig(localcloud.AWSConfig(second.stack.Endpoint))
	var back []sqstypes.Message
	eventually(t, 2*time.Minute, "the message held at the stop is back", func() bool {
		checked := time.Now()
		out, err := queues.ReceiveMessage(context.Background(), &sqssdk.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
		require.NoError(t, err)
		if len(out.Messages) > 0 {
			require.False(t, checked.Before(visibleAgain.Add(-2*time.Second)), "back before its visibility timeout ended")
			back = out.Messages
		}
		return len(back) > 0
	})
	require.Equal(t, "held at the stop", aws.ToString(back[0].Body))

	// The provider recovers: the owed mail goes out, once.
	second.sandbox(second.stack.MailURL, http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	eventually(t, 3*time.Minute, "the owed mail is sent", func() bool {
		st, _ := notification(second.api(student, http.MethodGet, "/enrollments/"+enrollmentID, nil))
		return st == "sent"
	})
	require.Len(t, second.mailTo(student.email), 1, "sent once")

	// The student pays: the webhook completes the saga that waited through
	// the restart.
	second.sandbox(second.stack.PaymentURL, http.MethodPost, "/_sandbox/payments/"+url.PathEscape(paymentID)+"/succeed", nil)
	eventually(t, 2*time.Minute, "the purchase is confirmed", func() bool {
		p = second.api(student, http.MethodGet, "/purchases/"+purchaseID, nil)
		require.NotContains(t, []string{"expired", "needs_reconciliation", "refund_pending"}, p.str("status"), string(p.raw))
		return p.str("status") == "confirmed"
	})
	require.Equal(t, []string{"reserved", "payment_pending", "confirmed"}, statuses(p))
	client := sfnsdk.NewFromConfig(localcloud.AWSConfig(second.stack.Endpoint))
	var execARN string
	list, err := client.ListExecutions(context.Background(), &sfnsdk.ListExecutionsInput{
		StateMachineArn: aws.String(second.stack.StateMachines["PurchaseStateMachine"])})
	require.NoError(t, err)
	for _, x := range list.Executions {
		if aws.ToString(x.Name) == purchaseID {
			execARN = aws.ToString(x.ExecutionArn)
			require.Equal(t, "SUCCEEDED", string(x.Status))
		}
	}
	require.NotEmpty(t, execARN, "the execution started before the restart is listed")
	hist, err := client.GetExecutionHistory(context.Background(), &sfnsdk.GetExecutionHistoryInput{ExecutionArn: aws.String(execARN)})
	require.NoError(t, err)
	started := 0
	for i, ev := range hist.Events {
		require.EqualValues(t, i+1, ev.Id, "one history, numbered on across the restart")
		if ev.Type == "ExecutionStarted" {
			started++
		}
	}
	require.Equal(t, 1, started)

	// Nothing the relay had finished was delivered again: everything it
	// read after the restart came after its checkpoint.
	final := second.relay()
	require.Equal(t, final.Checkpoint-kept["RelayFunction.Outbox"], final.Stats.Succeeded+final.Stats.Filtered+final.Stats.Discarded,
		"the relay finished only records after its kept checkpoint, each once")
	second.interrupt()
}

// lagOf reads the relay's lag from /_club/stats.
func lagOf(t *testing.T, raw []byte) uint64 {
	var doc struct {
		Mappings map[string]struct {
			Lag uint64 `json:"lag"`
		} `json:"stream_mappings"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc.Mappings["RelayFunction.Outbox"].Lag
}

// ack is an acknowledged write: a class the API answered 201 for.
type ack struct {
	id string
	at time.Time
}

// TestKill9LosesAtMostTheLastSnapshotInterval measures what a kill -9 of the
// local cloud loses. Classes are created one after another, each answered
// 201; the process is killed in the middle of it and started again. What
// survived is a prefix of what was acknowledged (the emulator's snapshot is
// one consistent moment), and the test logs how long before the kill the
// first lost class was acknowledged: the window docs/local-cloud.md
// documents. Once a snapshot was written after the last acknowledgement,
// a kill -9 loses nothing. --fresh then starts empty.
func TestKill9LosesAtMostTheLastSnapshotInterval(t *testing.T) {
	state, a := t.TempDir(), freeAddrs(t)
	first := start(t, state, a)
	teacher := first.user("teacher")
	children := descendants(first.cmd.Process.Pid)
	require.NotEmpty(t, children)

	newClass := func(r *running, title string) (string, error) {
		body, _ := json.Marshal(map[string]any{"title": title, "capacity": 5, "starts_at": "2030-01-01T17:00:00Z"})
		req, _ := http.NewRequest(http.MethodPost, r.stack.APIURL+"/classes", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+teacher.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var out struct {
			ClassID string `json:"class_id"`
		}
		if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		return out.ClassID, nil
	}

	var acks []ack
	var killedAt time.Time
	killed := make(chan struct{})
	go func() {
		// Killed after enough writes to span several snapshot intervals.
		for {
			time.Sleep(50 * time.Millisecond)
			if len(acksSnapshot(&acks)) >= 60 {
				break
			}
		}
		killedAt = time.Now()
		_ = first.cmd.Process.Signal(syscall.SIGKILL)
		close(killed)
	}()
	// One class every 40 ms or so: the 60 before the kill span a few
	// snapshot intervals (1 s).
	for i := 0; ; i++ {
		id, err := newClass(first, fmt.Sprintf("class %d", i))
		if err != nil {
			break
		}
		appendAck(&acks, ack{id: id, at: time.Now()})
		time.Sleep(40 * time.Millisecond)
	}
	<-killed
	select {
	case <-first.exited:
	case <-time.After(patience.Wait()):
		t.Fatal("club-local survived SIGKILL")
	}
	acked := acksSnapshot(&acks)
	eventually(t, 30*time.Second, "the function processes end with the local cloud", func() bool {
		for _, pid := range children {
			if alive(pid) {
				return false
			}
		}
		return true
	})

	second := start(t, state, a)
	require.Contains(t, second.stderr.String(), "did not stop cleanly", "the next start says what a kill -9 means")
	lost := -1
	for i, c := range acked {
		got := second.api(teacher, http.MethodGet, "/classes/"+c.id, nil)
		switch got.status {
		case http.StatusOK:
			require.Equal(t, -1, lost, "class %d survived but class %d, acknowledged before it, was lost", i, lost)
		case http.StatusNotFound:
			if lost < 0 {
				lost = i
			}
		default:
			t.Fatalf("GET class %d: %d %s", i, got.status, got.raw)
		}
	}
	if lost < 0 {
		t.Logf("kill -9 after %d acknowledged classes: none lost", len(acked))
	} else {
		t.Logf("kill -9 after %d acknowledged classes: the last %d lost, the first of them acknowledged %d ms before the kill",
			len(acked), len(acked)-lost, killedAt.Sub(acked[lost].at).Milliseconds())
	}

	// After a snapshot that followed the last acknowledgement, nothing is
	// lost.
	id, err := newClass(second, "kept")
	require.NoError(t, err)
	acknowledged := time.Now()
	snapshot := filepath.Join(state, "state", "kumo", "dynamodb.json")
	eventually(t, time.Minute, "a snapshot written after the acknowledgement", func() bool {
		fi, err := os.Stat(snapshot)
		return err == nil && fi.ModTime().After(acknowledged)
	})
	// A second local cloud on the same state directory is refused.
	other := freeAddrs(t)
	out, err := exec.Command(clubLocal(t), "--state-dir", state, "--endpoint", other.endpoint, "--api", other.api,
		"--mail", other.mail, "--payment", other.payment, "--quiet").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "another local cloud runs on it")
	second.kill()
	third := start(t, state, a)
	require.Equal(t, http.StatusOK, third.api(teacher, http.MethodGet, "/classes/"+id, nil).status)
	third.interrupt()

	// --fresh: empty.
	fresh := start(t, state, a, "--fresh")
	require.Equal(t, http.StatusNotFound, fresh.api(teacher, http.MethodGet, "/classes/"+id, nil).status)
	fresh.interrupt()
}

var acksMu sync.Mutex

func appendAck(acks *[]ack, a ack) {
	acksMu.Lock()
	defer acksMu.Unlock()
	*acks = append(*acks, a)
}

func acksSnapshot(acks *[]ack) []ack {
	acksMu.Lock()
	defer acksMu.Unlock()
	return append([]ack(nil), *acks...)
}

// A state directory this club-local cannot read stops it before anything
// starts, with the directory and the fix; nothing in it is touched.
func TestUnreadableStateStopsTheStart(t *testing.T) {
	for name, format := range map[string]string{
		"newer":   `{"format":"club-local-state","version":99}`,
		"garbled": `{"format":`,
	} {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(state, "state")
			require.NoError(t, os.MkdirAll(dir, 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "FORMAT"), []byte(format), 0o600))
			a := freeAddrs(t)
			cmd := exec.Command(clubLocal(t), "--state-dir", state, "--endpoint", a.endpoint, "--api", a.api,
				"--mail", a.mail, "--payment", a.payment, "--quiet")
			root, err := moduleRoot()
			require.NoError(t, err)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, string(out))
			require.Equal(t, 1, exit.ExitCode())
			require.Contains(t, string(out), dir)
			require.Contains(t, string(out), "make reset")
			require.Contains(t, string(out), "--fresh")
			require.NotContains(t, string(out), "functions built", "it stopped before building anything")
			raw, err := os.ReadFile(filepath.Join(dir, "FORMAT"))
			require.NoError(t, err)
			require.Equal(t, format, string(raw), "nothing was discarded")
		})
	}
	var stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"--persist=false", "--fresh"}, &stderr))
	require.Contains(t, stderr.String(), "--persist=false")
}
