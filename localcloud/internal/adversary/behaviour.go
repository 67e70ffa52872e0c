package adversary

// Behaviour names one way AWS is documented to misbehave. Each is produced by
// one unit of this package, has its own rate and counter, and a test that
// proves it happens at rate 1.
type Behaviour string

// The behaviours. The comment of each says what it does; Doc gives the AWS
// page that allows it.
const (
	// SQSRedeliver acknowledges a DeleteMessage (or a batch entry) of a
	// standard queue without deleting: the message is received again, with a
	// higher ApproximateReceiveCount. At most once per message.
	SQSRedeliver Behaviour = "sqs.redeliver"
	// SQSReorder returns a standard queue's received messages in another
	// order.
	SQSReorder Behaviour = "sqs.reorder"
	// SQSPartialReceive receives fewer messages than MaxNumberOfMessages
	// asks for (a short poll samples a subset of the servers).
	SQSPartialReceive Behaviour = "sqs.partial_receive"
	// SNSDuplicate delivers a standard topic's message to its subscriptions
	// twice.
	SNSDuplicate Behaviour = "sns.duplicate"
	// LambdaRedeliver invokes an event source mapping's batch again after it
	// was processed (SQS and DynamoDB Streams).
	LambdaRedeliver Behaviour = "lambda.esm_redeliver"
	// LambdaAsyncRetry delivers a schedule's (asynchronous) event twice.
	LambdaAsyncRetry Behaviour = "lambda.async_repeat"
	// SFNTaskRerun runs a Step Functions Task's Lambda function again (as a
	// retrier after Lambda.Unknown does); the execution continues with the
	// last run's result.
	SFNTaskRerun Behaviour = "sfn.task_rerun"
	// DDBStaleRead answers a GetItem, Query or Scan of a table without
	// ConsistentRead with an item's version before its latest write (or
	// without the item), when that write is within the staleness window.
	DDBStaleRead Behaviour = "ddb.stale_read"
	// DDBIndexLag answers a Query or Scan of a global secondary index as if
	// the index had not yet seen the table's writes of the staleness window.
	DDBIndexLag Behaviour = "ddb.gsi_lag"
	// DDBTransactionConflict cancels a TransactWriteItems with
	// TransactionCanceledException, reason TransactionConflict on one item
	// and None on the others; nothing is written.
	DDBTransactionConflict Behaviour = "ddb.transaction_conflict"
	// DDBWriteConflict refuses a PutItem, UpdateItem or DeleteItem with
	// TransactionConflictException, as DynamoDB refuses a write to an item a
	// transaction is writing; nothing is written.
	DDBWriteConflict Behaviour = "ddb.write_conflict"
	// DDBThrottle refuses a DynamoDB data-plane call before doing it, with
	// ProvisionedThroughputExceededException, ThrottlingException,
	// RequestLimitExceeded or InternalServerError.
	DDBThrottle Behaviour = "ddb.throttle"
	// LostAnswer carries a call out and answers 500 instead of its answer,
	// as a connection that breaks after the work: the SDK retries and the
	// retry runs again, except where the API makes it idempotent.
	LostAnswer Behaviour = "any.lost_answer"
)

// Behaviours lists every behaviour, in the order the docs give them.
var Behaviours = []Behaviour{
	SQSRedeliver, SQSReorder, SQSPartialReceive, SNSDuplicate,
	LambdaRedeliver, LambdaAsyncRetry, SFNTaskRerun,
	DDBStaleRead, DDBIndexLag, DDBTransactionConflict, DDBWriteConflict, DDBThrottle,
	LostAnswer,
}

// Doc is the AWS documentation page that allows each behaviour.
var Doc = map[Behaviour]string{
	SQSRedeliver:           "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html",
	SQSReorder:             "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues.html",
	SQSPartialReceive:      "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html",
	SNSDuplicate:           "https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html",
	LambdaRedeliver:        "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html",
	LambdaAsyncRetry:       "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html",
	SFNTaskRerun:           "https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html",
	DDBStaleRead:           "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.ReadConsistency.html",
	DDBIndexLag:            "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes",
	DDBTransactionConflict: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling",
	DDBWriteConflict:       "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling",
	DDBThrottle:            "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html",
	LostAnswer:             "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html",
}
