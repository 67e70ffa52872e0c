package front

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// engineCall sends one JSON-protocol call to h.
func engineCall(h http.Handler, target, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("X-Amz-Target", target)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestSerialisedHandsEachGroupOneCallAtATime(t *testing.T) {
	var inFlight, most [2]atomic.Int32 // DynamoDB, others
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := 1
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB") {
			g = 0
		}
		n := inFlight[g].Add(1)
		for {
			m := most[g].Load()
			if n <= m || most[g].CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // a call that takes a while, so that overlaps would show
		inFlight[g].Add(-1)
		_, _ = io.WriteString(w, "{}")
	})
	s := Serialised(engine)
	var wg sync.WaitGroup
	for i := range 40 {
		target := "DynamoDB_20120810.TransactWriteItems"
		switch i % 4 {
		case 1:
			target = "DynamoDBStreams_20120810.GetRecords"
		case 2:
			target = "AmazonSQS.SendMessage"
		case 3:
			target = "AmazonSNS.Publish"
		}
		wg.Go(func() { require.Equal(t, http.StatusOK, engineCall(s, target, "{}").Code) })
	}
	wg.Go(func() {
		s.Exclusive(func(next http.Handler) {
			require.Equal(t, http.StatusOK, engineCall(next, "DynamoDBStreams_20120810.GetShardIterator", "{}").Code)
			require.Equal(t, http.StatusOK, engineCall(next, "DynamoDBStreams_20120810.GetRecords", "{}").Code)
		})
	})
	wg.Wait()
	require.EqualValues(t, 1, most[0].Load(), "DynamoDB calls, Exclusive's included, never overlap")
	require.EqualValues(t, 1, most[1].Load(), "the other services' calls never overlap")
}

func TestSerialisedLongPollHoldsNobodyBack(t *testing.T) {
	var sent atomic.Bool
	var waits []string
	var mu sync.Mutex
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.ReceiveMessage":
			var in map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(body, &in))
			mu.Lock()
			waits = append(waits, string(in["WaitTimeSeconds"]))
			mu.Unlock()
			if sent.Load() {
				_, _ = io.WriteString(w, `{"Messages":[{"Body":"hello"}]}`)
				return
			}
			_, _ = io.WriteString(w, `{}`)
		case "AmazonSQS.SendMessage":
			sent.Store(true)
			_, _ = io.WriteString(w, `{"MessageId":"1"}`)
		}
	})
	s := Serialised(engine)
	polled := make(chan *httptest.ResponseRecorder)
	go func() {
		polled <- engineCall(s, "AmazonSQS.ReceiveMessage", `{"QueueUrl":"q","WaitTimeSeconds":20}`)
	}()
	// The send goes through while the poll waits, and wakes it.
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(waits) >= 2 }, patience.Wait(), time.Millisecond,
		"the long poll asks the engine again while it waits")
	require.Equal(t, http.StatusOK, engineCall(s, "AmazonSQS.SendMessage", `{"QueueUrl":"q","MessageBody":"hello"}`).Code)
	got := <-polled
	require.Equal(t, http.StatusOK, got.Code)
	require.JSONEq(t, `{"Messages":[{"Body":"hello"}]}`, got.Body.String())
	mu.Lock()
	defer mu.Unlock()
	for _, w := range waits {
		require.Equal(t, "0", w, "the engine only ever sees short polls")
	}
}

// An engine answer that breaks half-way is never passed on: a read is asked
// again, anything else is answered 500 (the engine may have carried it out).
func TestBufferedProxyNeverPassesOnABrokenAnswer(t *testing.T) {
	var calls sync.Map // target → *atomic.Int32
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		n, _ := calls.LoadOrStore(target, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			// The first answer of each operation breaks after its header.
			conn, buf, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"Item\":")
			_ = buf.Flush()
			_ = conn.Close()
			return
		}
		_, _ = io.WriteString(w, `{"Item":{"pk":{"S":"a"}}}`)
	}))
	t.Cleanup(engine.Close)
	u, err := url.Parse(engine.URL)
	require.NoError(t, err)
	srv := httptest.NewServer(NewBufferedProxy(u))
	t.Cleanup(srv.Close)
	post := func(target string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(`{"TableName":"t"}`))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", target)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the client always gets a whole answer")
		return resp.StatusCode, string(b)
	}
	code, body := post("DynamoDB_20120810.GetItem")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"Item":{"pk":{"S":"a"}}}`, body, "a read is asked again")
	code, body = post("DynamoDB_20120810.PutItem")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "InternalFailure")
	n, _ := calls.Load("DynamoDB_20120810.PutItem")
	require.EqualValues(t, 1, n.(*atomic.Int32).Load(), "a write is never sent twice by the proxy")
}
