// Package front is the local cloud's single AWS endpoint. It accepts every AWS
// API call on one address (default 127.0.0.1:4566), counts it by service and
// operation, and routes it: the parts of AWS the local cloud implements itself
// (the Lambda data plane, DynamoDB stream recording, DynamoDB Streams, Step
// Functions) go to their handlers; everything else goes to the embedded kumo
// emulator through a reverse proxy.
//
// Routing is by the request itself, as AWS routes by host: the X-Amz-Target
// header for JSON-protocol services, the REST path for Lambda, and the
// service named in the SigV4 credential scope for everything else. The
// counter is safe for concurrent use; benchmarks read it over HTTP at
// GET /_club/requests (and reset it with DELETE).
package front
