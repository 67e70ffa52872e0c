// Package sqsquery lets SQS clients that speak the AWS Query protocol use the
// local cloud, whose emulator serves SQS only over the AWS JSON 1.0 protocol.
//
// SQS has two wire protocols. Current SDKs send JSON (`X-Amz-Target:
// AmazonSQS.<Action>`, `application/x-amz-json-1.0`). Older clients, among
// them the AWS CLI that Debian 12 packages, send the Query protocol: a
// form-encoded `Action=SendMessage&Version=2012-11-05&QueueUrl=...` to `/` or
// to the queue URL, and they expect XML back. New wraps the handler in front
// of the emulator: it recognises a Query-protocol SQS call, rewrites it as the
// equivalent JSON call, sends that to the wrapped handler, and rewrites the
// JSON answer as the XML response or XML error the Query client expects.
//
// # Which requests are translated
//
// A request is an SQS Query call when it has no X-Amz-Target header, carries
// its parameters as a form (a form-encoded POST, or a GET with a query string)
// with an Action, and either
//   - is signed for the service "sqs" (the SigV4 credential scope
//     `<key>/<date>/<region>/sqs/aws4_request`, in the Authorization header or
//     a presigned X-Amz-Credential parameter), or
//   - is unsigned, is sent to a queue URL path (`/<12-digit account>/<queue>`)
//     and names an SQS action.
//
// Every other request, including JSON-protocol SQS and Query calls signed for
// other services (SNS), reaches the wrapped handler unchanged; a body read to
// find the Action is restored first.
//
// # Translation contract
//
//   - Parameters follow SQS's Query serialization (flattened lists and maps:
//     `AttributeName.1`, `Attribute.1.Name`/`.Value`, `Tag.1.Key`,
//     `MessageAttribute.1.Value.StringValue`, `SendMessageBatchRequestEntry.1.Id`,
//     ...). A QueueUrl missing from the form is taken from the request path.
//     Parameters the action does not define are dropped, as the JSON call has
//     no place for them; an action this package does not know is still
//     forwarded, with its unindexed parameters as strings, so that the
//     emulator gives the answer.
//   - Responses are `<ActionResponse><ActionResult>...` with the element names
//     of the SQS Query API, and the request ID the emulator gave.
//   - Errors become `<ErrorResponse>` with the Query error code and HTTP status
//     the SQS service model assigns to each JSON error (for example
//     QueueDoesNotExist becomes AWS.SimpleQueueService.NonExistentQueue, 400;
//     ReceiptHandleIsInvalid keeps its name with 404). An error the emulator
//     reports for an action it lacks (ListDeadLetterSourceQueues,
//     StartMessageMoveTask, ...) is passed on as an error, never replaced by an
//     invented success.
//   - Nothing is added to the emulator's behaviour: the same request over JSON
//     and over Query has the same effect.
//
// # Concurrency
//
// The handler keeps no state between requests and is safe for concurrent use.
// It buffers the wrapped handler's response (a long poll included) before
// translating it; the client's context still reaches the wrapped handler, so
// a client that gives up cancels the call.
package sqsquery
