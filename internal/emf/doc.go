// Package emf writes CloudWatch Embedded Metric Format lines: one JSON object
// per line on a writer (a Lambda function's stdout), which CloudWatch Logs
// turns into metrics without any API call from the function.
//
//	{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"Club",
//	  "Dimensions":[["Function"]],"Metrics":[{"Name":"OutboxPublishLag","Unit":"Milliseconds"}]}]},
//	 "Function":"relay","OutboxPublishLag":[12.5,40]}
//
// A metric carries one or more samples. Many samples of one metric in one
// line (a batch's latencies) are cheaper than a line each; the format allows
// at most 100 values per metric per line, so [Entry.Emit] splits longer
// series over several lines. A metric without samples is left out, and an
// entry without any samples writes nothing, so callers need not special-case
// an empty batch.
//
// Dimensions turn into separate CloudWatch metrics (one per distinct value
// set): keep them few and of low cardinality (a function name, a queue), never
// an id. Ids belong in [Entry.Properties]: they are kept in the log line,
// searchable with Logs Insights, and cost nothing as metrics.
//
// Contracts: an entry is validated completely before anything is written
// (errors wrap [ErrInvalid]); each line is written with one Write call, so
// lines of concurrent callers never interleave on a writer that serialises
// writes (os.Stdout does). The package has no state and is safe for
// concurrent use.
package emf
