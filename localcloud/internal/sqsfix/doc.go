// Package sqsfix makes the engine's SQS answer as SQS does where the engine
// does not, for calls in the JSON protocol (the Query protocol is translated
// into it first, package sqsquery), whichever engine serves them:
//
//   - ReceiveMessage returns only the message attributes named in
//     MessageAttributeNames ("All", ".*", "prefix.*" or names) and only the
//     system attributes named in MessageSystemAttributeNames (or the older
//     AttributeNames), with MD5OfMessageAttributes of those returned; kumo
//     returns every attribute whatever is asked, and no digest.
//   - SendMessage and SendMessageBatch answer MD5OfMessageAttributes; a
//     message over its queue's MaximumMessageSize (at most 1 MiB, body and
//     attributes together) is refused with InvalidParameterValue, a batch
//     over 1 MiB in all with BatchRequestTooLong, and counted; kumo accepted
//     them.
//   - A new queue's MaximumMessageSize is SQS's default, 1 MiB (kumo's is
//     256 KiB).
//   - With WithMaxRequest (moto, which cannot read a request body over
//     about 1 MiB and answered a send of a message just under 1 MiB with
//     NonExistentQueue): such a request is refused, naming the feature and
//     the local cloud, and counted.
//   - An error answer carries the x-amzn-query-error header ("code;fault")
//     and the model's error name in __type, as AWS's JSON endpoint does, so
//     that an SDK sees QueueDoesNotExist with the code
//     AWS.SimpleQueueService.NonExistentQueue; kumo wrote the Query code into
//     __type and no header.
//   - Queue URLs (CreateQueue, GetQueueUrl, ListQueues) name the endpoint the
//     caller reached; kumo's always said localhost:4566.
//   - With WithStaleCounts (kumo): a message whose visibility timeout ran
//     out counts in ApproximateNumberOfMessages, not
//     ApproximateNumberOfMessagesNotVisible, without waiting for a receive.
//
// moto 5.2 does the first and the last three itself; the corrections leave
// its answers as they are (they only add what is missing, and filter what
// was asked for in full).
package sqsfix
