// Package locate answers "where is this id now, and what happened to it?"
// for an enrollment, class, purchase, operation, event or message id: the
// console's find by id.
//
// It looks in every place a piece of work can be: the club table (the
// entity itself, and the inbox records of the consumers that applied its
// events), the outbox (the events it raised, published or not), the
// dead-letter queues (peeked: a DLQ has no redrive policy, so the receive
// harms nothing), the live queues only when asked (a peek counts toward a
// message's maxReceiveCount), and the saga's executions (by their names:
// the purchase id, and <id>-refund).
//
// Finding by id scans the club and outbox tables (as clubctl reconcile and
// status scan the club table): cheap on the local cloud, a read of both
// tables on AWS.
package locate
