// Package sqsconsumer is the edge every SQS-triggered function shares: it
// runs a handler over the messages of a Lambda SQS batch and maps each
// message's result to what SQS should do with it (docs/principles.md §1.18, §1.19):
//
//	result of the handler                       what the consumer does
//	nil, inbox.ErrDuplicate                     acknowledge (left out of batchItemFailures)
//	Permanent(code, err), events.ErrMalformed,  send the original body to the DLQ with
//	  ErrUnknownType, ErrUnsupportedVersion,      dlq_code, dlq_reason, source_queue,
//	  inbox.ErrContractConflict                   original_message_id, receive_count;
//	                                              then acknowledge (never retried)
//	RetryAfter(d, err)                          report in batchItemFailures; visible again after d
//	anything else (transient)                   report in batchItemFailures; visible again after
//	                                              an exponential backoff with full jitter
//
// Classification happens once, in [Classify]; handlers only mark what they
// know better than the defaults with [Permanent] (a stable snake_case code)
// or [RetryAfter] (a provider's Retry-After). A handler does not log its
// error: the consumer writes one structured line per retried or
// dead-lettered message (with message_id, event_id, receive_count and the
// dlq_code) and one Embedded Metric Format line per batch (queue wait =
// now − SentTimestamp per message; acknowledged, duplicate, retried and
// dead-lettered counts), under the dimension Function = Config.Name.
//
// # Retry delays
//
// The delay is set with ChangeMessageVisibility on the message's receipt
// handle, which the event source mapping leaves in place for the messages
// it is told failed. It grows with ApproximateReceiveCount: uniformly random
// among the whole seconds in [base, min(cap, base·2^n)] (1 s and 30 s by
// default, so even the first retries of messages that failed together are
// spread over two seconds, and a message
// is retried at least every 30 s and pending mail goes out within a minute
// of the provider recovering, docs/principles.md §7.1). A RetryAfter delay is honoured up
// to the same cap. After the queue's maxReceiveCount deliveries the redrive
// policy moves a message to the DLQ; with [Config.MaxReceiveCount] set, the
// consumer dead-letters the last failed delivery itself, with the code
// retries_exhausted and the last error as reason.
//
// # A retry budget in time
//
// A consumer that owes its messages more than a minute of retries (the
// notifier: a mail is owed through a provider outage of hours) sets
// [Config.RetryBudget]. A transient failure is then retried by sending a
// copy of the message, delayed by the same backoff (DelaySeconds) and
// carrying its deadline and its deliveries so far, and acknowledging the
// received one; if that send fails, the received message is retried as
// above instead. Each copy is received once per attempt, so maxReceiveCount
// counts only invocations that died before settling a copy and stays a
// backstop, and [Message.Attempt] counts across copies. A transient failure
// whose next retry could come after the deadline is dead-lettered with
// retry_deadline_passed; a permanent one as always.
//
// # Guarantees
//
//   - No message is lost by the consumer: a message is acknowledged only
//     after its handler succeeded or after it was written to the DLQ; if the
//     DLQ send fails, the message is retried instead.
//   - A dead letter keeps the original body and the original string
//     attributes (type and event_id first), so a redrive redelivers it as it
//     was. Handlers must be idempotent anyway: delivery is at least once.
//   - Ordering: messages of a batch run concurrently up to
//     Config.Concurrency (default 1: one after another, in batch order).
//     Messages of one FIFO message group always run one after another, and
//     after a failure the rest of the group is reported failed without
//     running and made visible again with the failed message, so a group's
//     order is never broken.
//   - [Consumer.ProcessBatch] gives a [BatchHandler] the whole batch in one
//     call (a consumer that commits a batch in one transaction) and still
//     settles, dead-letters and counts each message on its own, with the
//     fault points per message; FIFO batches go one message per call.
//   - A panic in a handler fails only its message (in ProcessBatch, the
//     messages of its call), transiently.
//   - With Config.VisibilityTimeout set, a message whose handler runs long
//     has its visibility extended every half timeout, so it is not handed
//     to a second worker meanwhile (docs/principles.md §1.3).
//
// # Where things are
//
// One file per job, each with its tests beside it (name_test.go):
//
//	consumer.go    Consumer, New, Process and the settling of one message
//	config.go      Config, its defaults and its validation; env.go reads it from the environment
//	order.go       concurrency within a batch, FIFO groups in order, holding back after a failure
//	batch.go       ProcessBatch: one handler call for the whole batch
//	verdict.go     Classify and the codes: what a handler's error means
//	backoff.go     the retry delay: Backoff, a provider's Retry-After, whole seconds
//	visibility.go  ChangeMessageVisibility, and keeping long work invisible
//	retry.go       retrying a transient failure, in place or as a delayed copy (RetryBudget)
//	deadletter.go  the dead letter and its reason
//	attributes.go  which original attributes a dead letter or a retry's copy keeps
//	message.go     Message, as a handler sees it
//	metrics.go     the Embedded Metric Format line of each batch
//
// The tests against a real queue run on each engine of the local cloud
// (main_test.go, package testkit); the others use the fake of package
// sqsconsumertest.
//
// A Consumer is safe for concurrent use.
package sqsconsumer
