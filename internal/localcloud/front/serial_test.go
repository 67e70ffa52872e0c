package front

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(waits) >= 2 }, 10*time.Second, time.Millisecond,
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
