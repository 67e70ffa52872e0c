// Package api serves the AWS Step Functions API over HTTP for the local
// cloud: the AWS JSON 1.0 protocol, requests routed by the X-Amz-Target
// header "AWSStepFunctions.<Operation>", errors as HTTP 400 with
// {"__type": "<Code>", "message": "..."}, timestamps as epoch seconds. The
// AWS SDKs (service/sfn) and the AWS CLI (`aws stepfunctions`) work against
// it unchanged.
//
// The handler only translates: every operation is a call on *sfn.Service,
// whose documentation states the semantics (idempotent StartExecution,
// history retention, callback tokens). List operations page with
// maxResults and an opaque nextToken. The handler is safe for concurrent
// use. Requests are not authenticated; signatures are accepted and ignored,
// as the local cloud has a single fixed account.
package api
