package ddbstream

import (
	"log/slog"
	"net/http"
	"time"
)

// Option configures a Recorder or an API.
type Option func(*settings)

type settings struct {
	now           func() time.Time
	logger        *slog.Logger
	engineRecords bool
	exclusive     func(fn func(engine http.Handler))
}

func newSettings(opts []Option) settings {
	s := settings{now: time.Now, logger: slog.Default()}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// WithClock replaces time.Now: it dates stream records and decides when
// idempotency tokens and shard iterators expire.
func WithClock(now func() time.Time) Option {
	return func(s *settings) { s.now = now }
}

// WithLogger sets where the recorder reports problems it cannot answer to
// the client, such as a write that committed but whose new image could not
// be read (slog.Default by default).
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}
