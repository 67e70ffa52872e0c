// Package adversary makes the local cloud misbehave the way AWS is documented
// to misbehave, so that the product is proven on a test bed no kinder than
// AWS: SQS and SNS deliver a message again and out of order, event source
// mappings and schedules invoke a batch again, DynamoDB reads without
// ConsistentRead miss a recent write and indexes lag their table,
// transactions meet conflicts, calls are throttled, and the answer of a call
// whose work was done is lost (the SDK retries, and the retry runs again).
//
// It is off by default. An Adversary holds one seed and a rate per
// behaviour (Behaviours lists them, each with the AWS page that allows it);
// Decide is the one place that decides, from the seed and the behaviour's
// own sequence of draws, so the same seed with the same calls makes the same
// decisions (FoundationDB's BUGGIFY, TigerBeetle's VOPR). Every decision
// carried out is counted (Stats, served in /_club/stats), so a run shows what
// it met.
//
// Two seams apply it: Handler wraps the whole endpoint (outermost, before
// the front) for API-level misbehaviour, and Invoker wraps what the local
// cloud's deliverers (event source mappings, schedules, the Step Functions
// executor's Lambda tasks) call functions with.
package adversary
