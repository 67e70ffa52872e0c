package adversary

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// publish carries out a Publish or PublishBatch; SNSDuplicate publishes a
// message again, so that every subscription of the topic receives it twice
// (SNS delivers at least once): each message of a batch is decided on its
// own, and the chosen ones are published again in one batch. The caller
// sees the first answer. FIFO topics, which deduplicate, are left alone.
//
// The copy carries its own SNS MessageId, where a copy SNS delivers again
// carries the first one: consumers that recognise a message again by
// anything but the SNS MessageId (the club's by its event id) see the same.
func (a *Adversary) publish(next http.Handler, c *call) *answer {
	ans := forward(next, c.r, c.body)
	if !ans.ok() || strings.HasSuffix(topicOf(c), ".fifo") {
		return ans
	}
	if c.operation == "Publish" || c.protocol != protoQuery {
		if a.Decide(SNSDuplicate) {
			if again := forward(next, c.r, c.body); again.ok() {
				a.Count(SNSDuplicate)
			}
		}
		return ans
	}
	again, n := chosenEntries(c.body, func() bool { return a.Decide(SNSDuplicate) })
	if n > 0 {
		if res := forward(next, c.r, again); res.ok() {
			for range n {
				a.Count(SNSDuplicate)
			}
		}
	}
	return ans
}

// chosenEntries is a PublishBatch form with only the entries choose picks
// (numbered again from 1), and how many it picked.
func chosenEntries(body []byte, choose func() bool) ([]byte, int) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, 0
	}
	const prefix = "PublishBatchRequestEntries.member."
	entries := map[int]url.Values{}
	out := url.Values{}
	for k, vs := range form {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			out[k] = vs
			continue
		}
		num, field, _ := strings.Cut(rest, ".")
		i, err := strconv.Atoi(num)
		if err != nil {
			return nil, 0
		}
		if entries[i] == nil {
			entries[i] = url.Values{}
		}
		entries[i][field] = vs
	}
	n := 0
	for i := 1; i <= len(entries); i++ {
		if entries[i] == nil || !choose() {
			continue
		}
		n++
		for field, vs := range entries[i] {
			out[fmt.Sprintf("%s%d.%s", prefix, n, field)] = vs
		}
	}
	return []byte(out.Encode()), n
}

// topicOf is the call's TopicArn, in either protocol.
func topicOf(c *call) string {
	if c.protocol == protoQuery {
		form, _ := url.ParseQuery(string(c.body))
		return form.Get("TopicArn")
	}
	var in struct{ TopicArn string }
	_ = json.Unmarshal(c.body, &in)
	return in.TopicArn
}
