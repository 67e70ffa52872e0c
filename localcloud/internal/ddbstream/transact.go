package ddbstream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tokenWindow is how long DynamoDB remembers a ClientRequestToken after the
// transaction that used it completed.
const tokenWindow = 10 * time.Minute

// transactWrite forwards TransactWriteItems with the two AWS behaviours
// kumo lacks: ClientRequestToken idempotency, and "None" as the code of the
// items that did not cause a cancellation.
func (rec *Recorder) transactWrite(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	token, digest, err := tokenAndDigest(body)
	if err != nil {
		return rec.forward(ctx, r, body), nil // kumo answers the malformed request
	}
	if token == "" {
		return rec.transactWriteOnce(ctx, r, body)
	}
	replay, err := rec.tokens.begin(token, digest)
	if err != nil {
		return nil, err
	}
	if replay != nil {
		return replay, nil
	}
	resp, err := rec.transactWriteOnce(ctx, r, body)
	rec.tokens.finish(token, resp)
	return resp, err
}

func (rec *Recorder) transactWriteOnce(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	resp, err := rec.write(ctx, r, "TransactWriteItems", body)
	if err != nil || resp.ok() {
		return resp, err
	}
	return resp, fixCancellationReasons(resp)
}

// fixCancellationReasons gives the code "None" to the items of a cancelled
// transaction that did not fail, as AWS does (kumo leaves it empty), and
// lists the codes in the message like AWS.
func fixCancellationReasons(resp *response) error {
	if errorType(resp.body.Bytes()) != "TransactionCanceledException" {
		return nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(resp.body.Bytes(), &doc); err != nil {
		return fmt.Errorf("decode cancellation: %w", err)
	}
	var reasons []map[string]json.RawMessage
	if err := json.Unmarshal(doc["CancellationReasons"], &reasons); err != nil {
		return fmt.Errorf("decode cancellation reasons: %w", err)
	}
	codes := make([]string, len(reasons))
	for i, reason := range reasons {
		var code string
		_ = json.Unmarshal(reason["Code"], &code) // a missing or odd code counts as none
		if code == "" {
			code = "None"
			reason["Code"] = json.RawMessage(`"None"`)
		}
		codes[i] = code
	}
	var err error
	if doc["CancellationReasons"], err = json.Marshal(reasons); err != nil {
		return fmt.Errorf("encode cancellation reasons: %w", err)
	}
	doc["message"], _ = json.Marshal("Transaction cancelled, please refer cancellation reasons for specific reasons [" +
		strings.Join(codes, ", ") + "]") // a string always marshals
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode cancellation: %w", err)
	}
	resp.replaceBody(body)
	return nil
}

// tokenStore remembers the ClientRequestTokens of TransactWriteItems. It is
// safe for concurrent use and holds only the tokens of the last tokenWindow.
type tokenStore struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*tokenEntry
	expiry  []expiring // completed tokens, oldest first
}

type tokenEntry struct {
	digest [sha256.Size]byte
	done   bool      // false while the first request is in progress
	result *response // the answer to replay, once done
}

type expiring struct {
	token string
	at    time.Time
}

func newTokenStore(now func() time.Time) *tokenStore {
	return &tokenStore{now: now, entries: map[string]*tokenEntry{}}
}

// begin claims token for a request with the given digest. It returns the
// answer to replay when a request with this token already succeeded, an
// *apiError when the token is in use by a request in progress
// (TransactionInProgressException) or by a different request
// (IdempotentParameterMismatchException), and (nil, nil) when the caller
// should run the request and then call finish.
func (s *tokenStore) begin(token string, digest [sha256.Size]byte) (*response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	e, ok := s.entries[token]
	switch {
	case !ok:
		s.entries[token] = &tokenEntry{digest: digest}
		return nil, nil
	case e.digest != digest:
		return nil, &apiError{Code: "IdempotentParameterMismatchException", Status: http.StatusBadRequest,
			Message: "The request uses the same client token as a previous, but non-identical request."}
	case !e.done:
		return nil, &apiError{Code: "TransactionInProgressException", Status: http.StatusBadRequest,
			Message: "The transaction with the given request token is already in progress."}
	}
	replay := newResponse()
	for k, vs := range e.result.header {
		replay.header[k] = append([]string(nil), vs...)
	}
	replay.status = e.result.status
	replay.body.Write(e.result.body.Bytes())
	return replay, nil
}

// finish ends the request begun with token. A successful answer is kept for
// replay during tokenWindow; after a failure the token is free again, so a
// retry of a cancelled transaction runs anew.
func (s *tokenStore) finish(token string, resp *response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[token]
	if !ok {
		return
	}
	if resp == nil || !resp.ok() {
		delete(s.entries, token)
		return
	}
	e.done, e.result = true, resp
	s.expiry = append(s.expiry, expiring{token: token, at: s.now().Add(tokenWindow)})
}

func (s *tokenStore) expireLocked() {
	now := s.now()
	n := 0
	for n < len(s.expiry) && !now.Before(s.expiry[n].at) {
		delete(s.entries, s.expiry[n].token)
		n++
	}
	s.expiry = s.expiry[n:]
}
