package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/sqsconsumer"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	decodeErr := func(body string) error {
		_, err := events.Decode([]byte(body))
		require.Error(t, err)
		return err
	}
	tests := []struct {
		name string
		err  error
		want sqsconsumer.Verdict
	}{
		{"success", nil, sqsconsumer.Verdict{Action: sqsconsumer.Ack}},
		{"duplicate", fmt.Errorf("roster: %w", inbox.ErrDuplicate), sqsconsumer.Verdict{Action: sqsconsumer.Ack, Duplicate: true}},
		{"malformed", decodeErr(`{"event_id":`), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "malformed_event"}},
		{"unknown type", decodeErr(envelopeOfType("seat.teleported", 1)), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "unknown_event_type"}},
		{"unsupported version", decodeErr(envelope(events.NewID(), 3)), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "unsupported_version"}},
		{"contract conflict", fmt.Errorf("x: %w", inbox.ErrContractConflict), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "contract_conflict"}},
		{"explicit permanent", sqsconsumer.Permanent("no_address", errors.New("no profile")), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "no_address"}},
		{"permanent wins over wrapped sentinel", sqsconsumer.Permanent("custom", inbox.ErrContractConflict), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "custom"}},
		{"retry after", fmt.Errorf("send: %w", sqsconsumer.RetryAfter(3*time.Second, errors.New("429"))), sqsconsumer.Verdict{Action: sqsconsumer.Retry, RetryAfter: 3 * time.Second}},
		{"transient", errors.New("connection reset"), sqsconsumer.Verdict{Action: sqsconsumer.Retry}},
		{"cancelled", context.DeadlineExceeded, sqsconsumer.Verdict{Action: sqsconsumer.Retry}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sqsconsumer.Classify(tt.err), tt.name)
	}
}

func envelopeOfType(typ string, version int) string {
	return fmt.Sprintf(`{"event_id":%q,"type":%q,"schema_version":%d,"aggregate_id":"a","occurred_at":"2026-03-01T10:00:00Z","data":{}}`,
		events.NewID(), typ, version)
}
