// Package obs is the observability vocabulary shared by every program: the
// JSON logger, the names of the fields that tie log lines to business objects,
// the redaction of personal data, and the metrics namespace.
//
// # Logs
//
// [NewLogger] returns a log/slog logger writing one JSON object per line (what
// CloudWatch Logs Insights queries). Attributes put on a context with
// [WithAttrs] are added to every record logged with that context, so a handler
// says once which event it is working on and every line below it, in any
// package, carries the same event_id:
//
//	ctx = obs.WithAttrs(ctx, obs.EventID(env.EventID), obs.ClassID(classID))
//	logger.InfoContext(ctx, "published")
//
// Field names are fixed ([KeyEventID], [KeyEnrollmentID], [KeyClassID], …) so
// that one query finds an event across every function.
//
// # Personal data
//
// Log lines never carry an e-mail address. Log an [Email] value (or the
// result of [RedactEmail]) instead: it renders as "s***@example.com", enough
// to tell two addresses apart while debugging and useless to anyone else.
//
// The logger is also a safety net for addresses nobody meant to log: an
// error from a mail provider that quotes the recipient, a message built with
// fmt, a struct logged whole. [NewLogger]'s handler redacts every address
// ([RedactText]) in the message, in string and error attributes, in groups,
// in the JSON form of any other value, in a derived logger's fields and in
// the context's attributes, before the line is written. Names are not
// recognisable in free text, so they are never logged at all: log ids.
//
// # Metrics
//
// Metrics are CloudWatch Embedded Metric Format lines (package emf) in the
// namespace [MetricsNamespace], with the dimension [DimFunction].
//
// Everything here is safe for concurrent use.
package obs
