// Package opstest gives the tests of the operations packages (internal/ops/...
// and internal/clubctl) an AWS endpoint in the test process: kumo, started
// once per test binary, behind a small front per test that
//
//   - drops kumo's X-Amz-Crc32 header, which does not match its DynamoDB
//     bodies (the local cloud's front corrects it; the SDK would otherwise
//     log a warning on every response), and
//   - serves /_club/... from a handler the test supplies, the way the local
//     cloud serves GET /_club/stats on its endpoint.
//
// kumo's services are process-wide singletons, so tests share its state:
// every helper here names resources uniquely (Name), and tests must not
// assume an empty account.
package opstest
