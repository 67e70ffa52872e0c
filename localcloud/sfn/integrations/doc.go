// Package integrations implements the Task resources of the Step Functions
// executor that reach other services: Lambda (through the local cloud's
// invoke.Invoker), DynamoDB, SQS and SNS (through AWS SDK v2 clients, which
// in the local cloud point at the local endpoint).
//
// Resources, their results and their errors follow AWS:
//
//   - arn:aws:states:::lambda:invoke[.waitForTaskToken] takes the Invoke
//     request (FunctionName, Payload, Qualifier, InvocationType) and returns
//     {"ExecutedVersion", "Payload", "SdkHttpMetadata", "SdkResponseMetadata",
//     "StatusCode"}, with a JSON payload embedded as JSON.
//   - A bare function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME) sends
//     the effective input as the payload and returns the payload itself.
//   - A function error (Result.FunctionError set) fails the task. Its error
//     name is the errorType of the error document, so a Go handler's
//     `return &PaymentDeclined{}` is caught by ErrorEquals ["PaymentDeclined"]
//     (aws-lambda-go reports the Go type name); platform failures keep the
//     type the Lambda API reports, e.g. Sandbox.Timedout for a function
//     timeout and Runtime.ExitError for a crashed process. An error
//     document without errorType is Lambda.Unknown, the name AWS documents
//     for unhandled errors. The cause is the whole error document as JSON
//     text, as AWS puts it in TaskFailed and in a catcher's "Cause".
//   - An infrastructure failure of the invoker (not a function error) is
//     Lambda.ServiceException; an invocation that outlived the invoker's own
//     deadline (while the task still runs) is
//     Lambda.ClientExecutionTimeoutException.
//   - arn:aws:states:::dynamodb:getItem|putItem|updateItem|deleteItem take
//     the API request with attribute values in DynamoDB JSON ({"S": "x"})
//     and return the API response the same way; a service error is
//     "DynamoDB.<ErrorCode>", e.g. DynamoDB.ConditionalCheckFailedException.
//   - arn:aws:states:::sqs:sendMessage[.waitForTaskToken] and
//     arn:aws:states:::sns:publish[.waitForTaskToken] take the API request;
//     a MessageBody or Message that is not a string is sent as its JSON
//     text. Errors are "SQS.<ErrorCode>" and "SNS.<ErrorCode>".
//
// Parameters are checked when a state machine is created: a field the
// integration does not know is an InvalidDefinition naming it, never
// silently dropped. A request that cannot be decoded at run time (a wrong
// type produced by a path) fails the task with States.Runtime.
//
// Handlers hold no state of their own and are safe for concurrent use.
package integrations
