package sqsfix

import (
	"encoding/json"
	"strconv"
	"time"
)

// The engine (kumo) moves a message whose visibility timeout ran out back
// among the visible ones only when someone receives from its queue; until
// then GetQueueAttributes counts it as not visible. Fixes keeps the receipt
// handles it saw received, with the time each becomes visible again, and
// forgets them when they are deleted or when a receive makes the engine
// catch up.

// receiving notes a receive on the queue starting at: the engine first
// returns the messages whose timeout ran out before it.
func (f *Fixes) receiving(queueURL string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queueName(queueURL)]
	if q == nil {
		return
	}
	for h, visibleAt := range q.inflight {
		if !visibleAt.After(at) {
			delete(q.inflight, h)
		}
	}
}

// inFlight records received handles, visible again at visibleAt.
func (f *Fixes) inFlight(queueURL string, handles []string, visibleAt time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queueLocked(queueName(queueURL))
	for _, h := range handles {
		q.inflight[h] = visibleAt
	}
}

func (f *Fixes) visibilityChanged(req request) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queueName(req.QueueURL)]
	if q == nil {
		return
	}
	set := func(h string, timeout *int) {
		if _, ok := q.inflight[h]; ok && timeout != nil {
			q.inflight[h] = now.Add(time.Duration(*timeout) * time.Second)
		}
	}
	set(req.ReceiptHandle, req.VisibilityTimeout)
	for _, e := range req.Entries {
		set(e.ReceiptHandle, e.VisibilityTimeout)
	}
}

func (f *Fixes) deleted(req request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queueName(req.QueueURL)]
	if q == nil {
		return
	}
	delete(q.inflight, req.ReceiptHandle)
	for _, e := range req.Entries {
		delete(q.inflight, e.ReceiptHandle)
	}
}

// forget drops what is known of a queue: its messages (purged or deleted
// queue) and its settings.
func (f *Fixes) forget(queueURL string, messages bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queueName(queueURL)]
	if q == nil {
		return
	}
	if messages {
		delete(f.queues, queueName(queueURL))
		return
	}
	q.maxSize, q.visibility = 0, 0
}

// correctCounts moves the messages whose visibility timeout ran out from
// ApproximateNumberOfMessagesNotVisible to ApproximateNumberOfMessages.
func (f *Fixes) correctCounts(queueURL string, body []byte) ([]byte, error) {
	if !f.staleCounts {
		return body, nil
	}
	now := f.now()
	f.mu.Lock()
	expired := 0
	if q := f.queues[queueName(queueURL)]; q != nil {
		for _, visibleAt := range q.inflight {
			if !visibleAt.After(now) {
				expired++
			}
		}
	}
	f.mu.Unlock()
	if expired == 0 {
		return body, nil
	}
	var out struct {
		Attributes map[string]string `json:"Attributes"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	const visible, notVisible = "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"
	if v, ok := out.Attributes[notVisible]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		expired = min(expired, n)
		out.Attributes[notVisible] = strconv.Itoa(n - expired)
	}
	if v, ok := out.Attributes[visible]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		out.Attributes[visible] = strconv.Itoa(n + expired)
	}
	f.countsCorrected.Add(1)
	return json.Marshal(out)
}
