// Package archtest holds the import rules of the module and the test that
// enforces them over `go list -json ./...` (run by `make lint`):
//
//   - the domain (internal/club/...) imports no AWS SDK, no adapter
//     (internal/store, internal/payment, …), no function or function logic,
//     and nothing of the harness;
//   - the local cloud (internal/localcloud/..., and localcloud/... once it
//     moves there) imports no domain, adapter, function or function-logic
//     package, and from the rest of the module only the short list in
//     localCloudMayImport, each entry with its reason;
//   - product code (everything that ships in a function or in clubctl: the
//     module outside cmd/, e2e/, bench/, reliability/, localstack/, the local
//     cloud and the test support) imports no local cloud, except
//     internal/clubctl the token issuer, and no test support;
//   - only a function's main (functions/<name>) and clubctl load the AWS
//     SDK's configuration (aws-sdk-go-v2/config): the packages a main wires
//     are handed the configuration or the clients.
//
// The rules follow the transitive imports a package ships with (go list's
// Deps), so a forbidden import cannot hide one package away. Test files are
// not product code and are not checked. Test support is every package
// whose name ends in "test" and the packages testSupportListed names.
//
// The layers are listed by folder in rules.go: a new adapter or function
// package is added to its layer there.
package archtest
