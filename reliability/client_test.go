package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/issuer"
)

var seq atomic.Int64

// id returns an identifier unique to this run, derived from its seed.
func id(prefix string) string {
	return fmt.Sprintf("%s-%x-%d", prefix, stack.seed&0xffffffff, seq.Add(1))
}

// function is the deployed name of a function of the template.
func function(t *testing.T, logicalID string) string {
	t.Helper()
	name := stack.file.Functions[logicalID]
	require.NotEmpty(t, name, "function %s is not in the stack", logicalID)
	return name
}

// user is a caller of the HTTP API.
type user struct {
	sub, email, token string
}

func newUser(role, sub string) (user, error) {
	u := user{sub: sub, email: sub + "@example.com"}
	tok, err := stack.issuer.Sign(issuer.Claims{
		Subject: sub, Audience: stack.file.JWTAudience, Email: u.email, Groups: []string{role},
	}, 2*time.Hour)
	u.token = tok
	return u, err
}

func mustUser(t *testing.T, role string) user {
	t.Helper()
	u, err := newUser(role, id(role))
	require.NoError(t, err)
	return u
}

// response is an HTTP answer with its JSON body decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// httpClient bounds every request: a hung request fails the test instead of
// hanging it.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// do sends a request to the HTTP API as u. headers alternate name, value.
func do(ctx context.Context, u user, method, path string, body any, headers ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, stack.file.APIURL+path, rd)
	if err != nil {
		return response{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+u.token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

func call(t *testing.T, u user, method, path string, body any) response {
	t.Helper()
	r, err := do(context.Background(), u, method, path, body)
	require.NoError(t, err)
	return r
}

func newClass(t *testing.T, capacity int) (string, user) {
	t.Helper()
	teacher := mustUser(t, "teacher")
	r := call(t, teacher, http.MethodPost, "/classes", map[string]any{
		"title": "Reliability", "capacity": capacity, "starts_at": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	return r.str("class_id"), teacher
}

// enrollment is what a client that repeats its request saw.
type enrollment struct {
	response
	// answers lists every answer before the final one: an HTTP status, or
	// "no answer" for a failed request.
	answers  []string
	replayed bool
}

func (e enrollment) attempts() int { return len(e.answers) + 1 }

// enroll is the client's side of the first boundary: it repeats the request
// with the same Idempotency-Key until it gets an answer that is not a
// server failure (5xx) or a lost connection, for up to a minute. With the
// adversary on, it repeats a 429 too, as its Retry-After invites: the
// adversary's transaction conflicts can outlast the store's own retries
// (club.ErrContention), as they can on AWS; without it, no enrollment may
// meet one.
func enroll(ctx context.Context, u user, classID, key string) (enrollment, error) {
	return repeatPost(ctx, u, "/classes/"+classID+"/enrollments", nil, key, stack.cloud.Adversary().On)
}

// repeatPost posts body with an Idempotency-Key (none if key is "") and repeats
// the same request until an answer that is not a server failure (5xx) or a
// lost connection, for up to a minute; with contention, a 429 is repeated
// too, as its Retry-After invites.
func repeatPost(ctx context.Context, u user, path string, body any, key string, contention bool) (enrollment, error) {
	var e enrollment
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var headers []string
	if key != "" {
		headers = []string{"Idempotency-Key", key}
	}
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		r, err := do(ctx, u, http.MethodPost, path, body, headers...)
		if err == nil && r.status < 500 && (!contention || r.status != http.StatusTooManyRequests) {
			e.response = r
			e.replayed = r.header.Get("Idempotent-Replayed") == "true"
			return e, nil
		}
		if err != nil {
			e.answers = append(e.answers, "no answer")
		} else {
			e.answers = append(e.answers, strconv.Itoa(r.status))
		}
		select {
		case <-ctx.Done():
			return e, fmt.Errorf("POST %s as %s: no answer after %d attempts (%s): %w", path, u.sub, e.attempts()-1, strings.Join(e.answers, ", "), errors.Join(err, ctx.Err()))
		case <-time.After(pause):
		}
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	// A wait ends as soon as its condition holds, so a generous floor costs
	// a passing run nothing, while a loaded two-core CI machine can be many
	// times slower than the deadline a test was written with.
	within = patience.Within(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s (seed %d)", within, what, stack.seed)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// control talks to an HTTP endpoint of the local cloud or a sandbox.
func control(t *testing.T, method, url string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, url, raw)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out))
	}
}

// armFaults arms plan on the local cloud (replacing any armed plan and
// resetting the counts) until the test ends.
func armFaults(t *testing.T, plan fault.Plan) {
	t.Helper()
	control(t, http.MethodPost, stack.file.Endpoint+"/_club/faults", plan, nil)
	t.Cleanup(func() { control(t, http.MethodDelete, stack.file.Endpoint+"/_club/faults", nil, nil) })
}

func faults(t *testing.T) fault.State {
	t.Helper()
	var s fault.State
	control(t, http.MethodGet, stack.file.Endpoint+"/_club/faults", nil, &s)
	return s
}

// faultsOf is the fault state with the passes of one key (an event id, an
// idempotency key) only.
func faultsOf(t *testing.T, key string) fault.State {
	t.Helper()
	var s fault.State
	control(t, http.MethodGet, stack.file.Endpoint+"/_club/faults?key="+url.QueryEscape(key), nil, &s)
	return s
}

// mailMessage is a message the mail provider accepted.
type mailMessage struct {
	MessageID      string `json:"message_id"`
	To             string `json:"to"`
	IdempotencyKey string `json:"idempotency_key"`
}

// mails lists the messages the mail provider accepted, for one address or
// (to == "") all.
func mails(t *testing.T, to string) []mailMessage {
	t.Helper()
	path := "/v1/messages"
	if to != "" {
		path += "?to=" + to
	}
	var out struct {
		Messages []mailMessage `json:"messages"`
	}
	control(t, http.MethodGet, stack.file.MailURL+path, nil, &out)
	return out.Messages
}

// queueDepth is what a queue holds: visible plus in flight plus delayed.
func queueDepth(t *testing.T, queue string) int {
	t.Helper()
	out, err := stack.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(stack.file.Queues[queue]),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	require.NoError(t, err)
	n := 0
	for _, v := range out.Attributes {
		c, err := strconv.Atoi(v)
		require.NoError(t, err)
		n += c
	}
	return n
}

// streamLag is how many outbox stream records the relay's mapping has not
// processed yet.
func streamLag(t *testing.T) int {
	t.Helper()
	var s struct {
		StreamMappings map[string]struct {
			Lag int `json:"lag"`
		} `json:"stream_mappings"`
	}
	control(t, http.MethodGet, stack.file.Endpoint+"/_club/stats", nil, &s)
	lag := 0
	for _, m := range s.StreamMappings {
		lag += m.Lag
	}
	return lag
}

// quiet waits until nothing is in motion: the outbox stream is consumed,
// every outbox row is published and the consumer queues are empty.
func quiet(t *testing.T, within time.Duration) {
	t.Helper()
	eventually(t, within, "the pipeline is quiet (stream consumed, outbox published, consumer queues empty)", func() bool {
		if streamLag(t) > 0 || pendingIntents(t) > 0 {
			return false
		}
		for _, q := range consumerQueues {
			if queueDepth(t, q) > 0 {
				return false
			}
		}
		return true
	})
}
