package adversary

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// publish carries out a Publish or PublishBatch; SNSDuplicate carries it out
// twice, so that every subscription of the topic receives the message twice
// (SNS delivers at least once). The caller sees the first answer. FIFO
// topics, which deduplicate, are left alone.
//
// The copy carries its own SNS MessageId, where a copy SNS delivers again
// carries the first one: consumers that recognise a message again by
// anything but the SNS MessageId (the club's by its event id) see the same.
func (a *Adversary) publish(next http.Handler, c *call) *answer {
	ans := forward(next, c.r, c.body)
	if !ans.ok() || strings.HasSuffix(topicOf(c), ".fifo") || !a.Decide(SNSDuplicate) {
		return ans
	}
	if again := forward(next, c.r, c.body); again.ok() {
		a.Count(SNSDuplicate)
	}
	return ans
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
