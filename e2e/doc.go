// Package e2e is the end-to-end suite of the Club backend. It talks only to a
// deployed stack's public surface — the HTTP API, the AWS APIs and the
// sandboxes — so the same tests run against the embedded local cloud (the
// default: TestMain starts it with infra/template.yaml), LocalStack or AWS
// (set CLUB_STACK_FILE to the stack's outputs; see localstack/README.md).
package e2e
