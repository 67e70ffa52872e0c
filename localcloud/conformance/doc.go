// Package conformance is the local cloud's own conformance suite: one case
// per documented AWS behaviour of the services the club uses (DynamoDB and
// its streams, SQS, SNS, Step Functions), each citing the AWS documentation
// page it follows, run against the endpoint the local cloud serves on each
// engine (kumo and moto; CLUB_ENGINES picks, as for the contract suites).
//
// A case either shows the behaviour as AWS documents it, or — where the local
// cloud cannot carry a request out as AWS would — shows that the request is
// refused with an error that names the feature and the local cloud, never
// accepted and carried out otherwise. Each case records its result; with
// -conformance.report FILE the suite writes the table (case, kumo, moto, AWS
// documentation) that docs/local-cloud.md carries.
package conformance
