package obs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// MetricsNamespace is the CloudWatch namespace of every metric the Club
// backend emits.
const MetricsNamespace = "Club"

// DimFunction is the metric dimension naming the emitting function (the
// template's function, e.g. "relay"); keep dimensions this coarse.
const DimFunction = "Function"

// Field names shared by every program's log lines.
const (
	KeyEventID      = "event_id"
	KeyEventType    = "event_type"
	KeyEnrollmentID = "enrollment_id"
	KeyClassID      = "class_id"
	KeyPurchaseID   = "purchase_id"
	KeyOperationID  = "operation_id"
	KeyRequestID    = "request_id"
	KeyFunction     = "function"
)

// KeyError is the field of an error's text.
const KeyError = "error"

// EventID, EventType, EnrollmentID, ClassID, PurchaseID, OperationID and
// RequestID build the shared fields.
func EventID(id string) slog.Attr      { return slog.String(KeyEventID, id) }
func EventType(t string) slog.Attr     { return slog.String(KeyEventType, t) }
func EnrollmentID(id string) slog.Attr { return slog.String(KeyEnrollmentID, id) }
func ClassID(id string) slog.Attr      { return slog.String(KeyClassID, id) }
func PurchaseID(id string) slog.Attr   { return slog.String(KeyPurchaseID, id) }
func OperationID(id string) slog.Attr  { return slog.String(KeyOperationID, id) }
func RequestID(id string) slog.Attr    { return slog.String(KeyRequestID, id) }

// Err is the field of an error's text; a nil error logs as an empty string.
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String(KeyError, "")
	}
	return slog.String(KeyError, err.Error())
}

// Options configure NewLogger.
type Options struct {
	// Level is the minimum level logged; nil means slog.LevelInfo.
	Level slog.Leveler
	// Function, if set, is added to every line as "function".
	Function string
}

// NewLogger returns a JSON logger on w that adds the attributes of
// [WithAttrs] contexts to each record. Build one per process, in main.
func NewLogger(w io.Writer, opts Options) *slog.Logger {
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	var h slog.Handler = contextHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})}
	logger := slog.New(h)
	if opts.Function != "" {
		logger = logger.With(slog.String(KeyFunction, opts.Function))
	}
	return logger
}

// ParseLevel reads a level name: DEBUG, INFO, WARN or ERROR in any case, and
// also TRACE and FATAL, the other values of Lambda's AWS_LAMBDA_LOG_LEVEL.
// The empty string is INFO.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "":
		return slog.LevelInfo, nil
	case "TRACE":
		return slog.LevelDebug - 4, nil
	case "FATAL":
		return slog.LevelError + 4, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log level %q: %w", s, err)
	}
	return l, nil
}

type ctxKey struct{}

// WithAttrs returns a context whose log records carry attrs, after any the
// context already carries. Loggers from NewLogger add them when called with
// the *Context methods (InfoContext, ...).
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	if len(attrs) == 0 {
		return ctx
	}
	prev := AttrsFrom(ctx)
	all := make([]slog.Attr, 0, len(prev)+len(attrs))
	all = append(append(all, prev...), attrs...)
	return context.WithValue(ctx, ctxKey{}, all)
}

// AttrsFrom returns the attributes WithAttrs put on ctx.
func AttrsFrom(ctx context.Context) []slog.Attr {
	attrs, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	return attrs
}

// contextHandler adds the context's attributes to each record.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs := AttrsFrom(ctx); len(attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// Email is an e-mail address that logs in redacted form.
type Email string

// LogValue implements slog.LogValuer.
func (e Email) LogValue() slog.Value { return slog.StringValue(RedactEmail(string(e))) }

// String keeps the address out of fmt output too.
func (e Email) String() string { return RedactEmail(string(e)) }

// RedactEmail keeps the first character of the local part and the domain:
// "student@example.com" → "s***@example.com". Anything without a local part
// and a domain becomes "***"; the empty string stays empty.
func RedactEmail(addr string) string {
	if addr == "" {
		return ""
	}
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return "***"
	}
	first, _ := utf8.DecodeRuneInString(addr)
	return string(first) + "***" + addr[at:]
}
