// Package sdkhttp is the HTTP client of every AWS SDK client in the club:
// the functions, clubctl, the local cloud and the tests.
//
// It mends a defect of the SDK's request bodies that loses answers. The
// SDK (smithy-go) hands net/http a request body that can write itself out
// (io.WriterTo) and closes it as soon as the transport returns the
// response, before the response body is read; once closed, its WriteTo
// returns io.EOF where io.WriterTo must return nil. net/http's transport
// sends a body larger than its 4 KB write buffer straight to the socket and
// only then makes its last check that the body has ended
// (io.Copy(io.Discard, body), which uses WriteTo). When the server answers
// in between — a server on the same machine often does — the check meets
// the closed body, io.Copy reports its io.EOF as an error, and the
// transport's write loop, taking the request write to have failed, closes
// the connection under the response being read: the call fails with
// "deserialization failed ... use of closed network connection" although the
// service carried it out. The SDK retries that error (it is net.ErrClosed),
// so a retried SendMessageBatch sends its messages twice and a retried
// ReceiveMessage hides the first attempt's messages for the visibility
// timeout. Seen as aws/aws-sdk-go-v2#1825 and #2737 against DynamoDB itself.
//
// The mend: Client hands the transport each request body behind a type
// that only reads. The transport's last check then reads, a closed body
// reads as io.EOF, and io.Copy takes that as the end it is. Nothing else
// about the request changes. A program calls Mend on the configuration it
// loaded; the local cloud's AWSConfig and the tests' configurations carry
// the client from the start. TestSDKAnswerSurvivesItsClosedRequestBody
// forces the order of events that loses the answer and fails without the
// mend; TestPlainSDKClientLosesTheAnswer pins the defect itself, so that a
// release of the SDK or of Go that fixes it is noticed.
package sdkhttp
