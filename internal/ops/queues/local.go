package queues

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// LocalAges reads the age of a queue's oldest message from the local
// cloud's GET /_club/queues/age, which knows it from the calls it served
// and receives nothing (package sqsage of the local cloud): the local
// counterpart of CloudWatch's ApproximateAgeOfOldestMessage.
type LocalAges struct {
	// Endpoint is the local cloud's AWS endpoint.
	Endpoint string
	// Client is the HTTP client (default http.DefaultClient).
	Client *http.Client
}

// localAge is the answer of GET /_club/queues/age.
type localAge struct {
	Messages     int        `json:"messages"`
	OldestSentAt *time.Time `json:"oldest_sent_at"`
	Untracked    int        `json:"untracked"`
	Complete     bool       `json:"complete"`
}

// Oldest returns the age at now of the oldest message of the queue at
// queueURL.
func (l LocalAges) Oldest(ctx context.Context, queueURL string, now time.Time) (Age, error) {
	u := strings.TrimRight(l.Endpoint, "/") + "/_club/queues/age?queue=" + url.QueryEscape(queueURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Age{}, err
	}
	c := l.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return Age{}, fmt.Errorf("local queue age: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Age{}, fmt.Errorf("local queue age: GET %s: %s", u, resp.Status)
	}
	var a localAge
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return Age{}, fmt.Errorf("local queue age: %w", err)
	}
	age := Age{Source: AgeLocal, Sampled: a.Messages, Complete: a.Complete}
	if a.OldestSentAt != nil {
		age.Oldest = max(now.Sub(*a.OldestSentAt), 0)
	}
	if !a.Complete {
		age.Note = fmt.Sprintf("%d messages delivered by SNS and not received yet: their age is not known", a.Untracked)
	}
	return age, nil
}
