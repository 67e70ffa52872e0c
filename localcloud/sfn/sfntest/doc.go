// Package sfntest is the one Step Functions test environment of the
// module: the local cloud's executor (package sfn) on a virtual clock, its
// task resources registered, state machines from a definition or from the
// repository's statemachines/ folder, and, when a test wants to go through
// the AWS SDK, the Step Functions API (package api) served over HTTP to an
// SDK client. Everything it starts stops when the test ends.
//
//	e := sfntest.New(t, sfntest.Options{})          // time skips to the next timer whenever every execution is blocked
//	e.Handle("arn:aws:states:::test:reserve", fake) // any resource
//	x := e.Run(definition, `{"seats":3}`)            // a fresh state machine, one execution, waited for
//	require.Equal(t, sfn.StatusSucceeded, x.Status)
//
// With Options.Manual time moves only with Advance (a test that races a
// timeout against a callback); with Options.Integrations the Lambda,
// DynamoDB, SQS and SNS integrations are registered on the given clients.
// Functions runs aws-lambda-go handlers in the test process and answers as
// the Lambda Invoke API does, for the Lambda integration.
//
// It plays the part river's riverdbtest and temporal's testsuite play for
// those projects: one place to build the environment, so that the tests of
// the executor, of its integrations and of the code that drives it (the
// saga's steps, the relay's workflow starter, the Step Functions adapter)
// do not each build their own.
package sfntest
