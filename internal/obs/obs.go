package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
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
// [WithAttrs] contexts to each record and redacts every e-mail address it
// finds in the message and in the attributes (see [RedactText]). Build one
// per process, in main.
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

// contextHandler adds the context's attributes to each record and redacts
// e-mail addresses from everything it passes on.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, RedactText(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	for _, a := range AttrsFrom(ctx) {
		out.AddAttrs(redactAttr(a))
	}
	return h.Handler.Handle(ctx, out)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	redacted := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		redacted[i] = redactAttr(a)
	}
	return contextHandler{h.Handler.WithAttrs(redacted)}
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

// emailPattern finds e-mail addresses inside free text: a local part of the
// characters RFC 5322 allows unquoted, "@", and a domain of labels (letters
// of any script included). A redacted address ("s***@example.com") matches
// too and redacts to itself.
var emailPattern = regexp.MustCompile("[\\p{L}\\p{N}.!#$%&'*+/=?^_`{|}~-]+@[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]*[\\p{L}\\p{N}])?(?:\\.[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]*[\\p{L}\\p{N}])?)*")

// ContainsEmail reports whether s holds something shaped like an e-mail
// address.
func ContainsEmail(s string) bool {
	return strings.IndexByte(s, '@') >= 0 && emailPattern.MatchString(s)
}

// RedactText replaces every e-mail address in s with its [RedactEmail] form,
// so that an address inside an error message or a provider's answer never
// reaches a log line whole. Text without "@" is returned as it is.
func RedactText(s string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	return emailPattern.ReplaceAllStringFunc(s, RedactEmail)
}

// redactAttr redacts an attribute's value: strings and errors as text,
// groups member by member, and any other value through its JSON form, which
// is what the JSON handler would write.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(RedactText(v.String()))
	case slog.KindGroup:
		members := v.Group()
		redacted := make([]slog.Attr, len(members))
		for i, m := range members {
			redacted[i] = redactAttr(m)
		}
		a.Value = slog.GroupValue(redacted...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(RedactText(x.Error()))
		default:
			a.Value = redactAny(v)
		}
	default:
		a.Value = v
	}
	return a
}

// redactAny redacts a value the JSON handler would marshal: its JSON form is
// decoded, every string in it (keys included) redacted, and the result
// written back as JSON. Values without "@" in their JSON form pass as they
// are.
func redactAny(v slog.Value) slog.Value {
	b, err := json.Marshal(v.Any())
	if err != nil {
		return slog.StringValue(RedactText(fmt.Sprintf("%+v", v.Any())))
	}
	if bytes.IndexByte(b, '@') < 0 {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return slog.StringValue(RedactText(string(b)))
	}
	out, err := json.Marshal(redactJSON(doc))
	if err != nil {
		return slog.StringValue(RedactText(string(b)))
	}
	return slog.AnyValue(json.RawMessage(out))
}

func redactJSON(doc any) any {
	switch x := doc.(type) {
	case string:
		return RedactText(x)
	case []any:
		for i, e := range x {
			x[i] = redactJSON(e)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[RedactText(k)] = redactJSON(e)
		}
		return out
	default:
		return doc
	}
}
