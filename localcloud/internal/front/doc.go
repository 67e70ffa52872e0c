// Package front is the local cloud's single AWS endpoint. It accepts every AWS
// API call on one address (default 127.0.0.1:4566), counts it by service and
// operation, and routes it: the parts of AWS the local cloud implements itself
// (the Lambda data plane, DynamoDB stream recording, DynamoDB Streams, Step
// Functions) go to their handlers; everything else goes to the embedded kumo
// emulator: its handler called in this process (WithEngineHandler), or a
// reverse proxy to its URL. The local cloud's own clients reach the front
// the same way without a connection (NewTransport).
//
// Routing is by the request itself, as AWS routes by host: the X-Amz-Target
// header for JSON-protocol services, the REST path for Lambda, and the
// service named in the SigV4 credential scope (the Authorization header, or
// X-Amz-Credential for a presigned URL) for everything else. The counter is
// safe for concurrent use; benchmarks read it over HTTP at
// GET /_club/requests (and reset it with DELETE).
//
// Presigned URLs (query-string SigV4, X-Amz-Algorithm=AWS4-HMAC-SHA256) are
// verified here, because kumo does not check their signatures: the
// parameters must be well formed (400 AuthorizationQueryParametersError,
// X-Amz-Expires 1..604800), the access key one the local cloud handed out
// (WithCredentials; 403 InvalidAccessKeyId), the signature the one the SDK's
// signer computes with its secret key over the request as received (403
// SignatureDoesNotMatch), and the front's clock (WithClock) inside
// [X-Amz-Date − 15 min, X-Amz-Date + X-Amz-Expires] (403 AccessDenied,
// "Request has expired" or "Request is not yet valid"). Errors are S3's XML
// documents: S3 is the service the system presigns for. A request that
// passes reaches kumo without its authentication parameters.
package front
