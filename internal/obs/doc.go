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
// # Metrics
//
// Metrics are CloudWatch Embedded Metric Format lines (package emf) in the
// namespace [MetricsNamespace], with the dimension [DimFunction].
//
// Everything here is safe for concurrent use.
package obs
