// Package sfn is the local cloud's AWS Step Functions: it stores state
// machines and runs their executions with the semantics AWS documents,
// where the emulator it replaces does not (a Lambda error is a task
// failure named after its errorType, Retry and Catch match every error
// name, executions have no 5-minute cap and keep a full history).
//
// Use it in-process from Go tests or behind the HTTP API of package api:
//
//	res := sfn.NewResources()
//	integrations.Register(res, integrations.FromAWSConfig(awsCfg, invoker))
//	res.Handle("arn:aws:states:::test:fake", sfn.TaskFunc(fake)) // any resource
//	clk := clock.NewVirtual(start)
//	defer clk.AutoAdvance()()
//	svc := sfn.New(sfn.Options{Clock: clk, Resources: res})
//	defer svc.Close()
//	sm, _ := svc.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "m", Definition: def})
//	x, _ := svc.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Input: `{}`})
//	done, _ := svc.WaitForCompletion(ctx, x.ARN)
//
// A test builds all of this with package sfntest, which also reads the
// repository's statemachines/, serves the HTTP API to an AWS SDK client
// and runs Lambda handlers in process.
//
// # Contracts
//
// Definitions are parsed and validated by CreateStateMachine and
// UpdateStateMachine (package asl): every unsupported construct, and every
// Task resource without a registered handler, is an InvalidDefinition error
// naming it and its location. Running executions keep the definition they
// started with. Where AWS's documentation is silent or differs from what
// AWS was recorded doing, the executor follows the recording; each such
// choice is a row of the parity ledger in docs/local-cloud.md, pinned by a
// case of the conformance suite (testdata/conformance).
//
// StartExecution is idempotent per name as on AWS: the same name and input
// while the execution runs returns it; another input, or any input after it
// closed, is ExecutionAlreadyExists. Executions and their histories are kept
// in memory for the life of the Service; with a Journal (SetJournal), a new
// Service restores them (Restore) and resumes the running ones from their
// last resume point, which Suspend leaves in place of aborting them
// (persist.go; docs/local-cloud.md, Keeping data across restarts).
//
// Each execution runs on its own goroutine; a Parallel branch or a Map
// iteration on one more. History events are appended in the order they
// happen; PreviousEventID links each event to the previous one of the same
// branch. Task handlers run on their own goroutines, concurrently with each
// other, and get a context cancelled when the task times out, its state is
// aborted, or the execution stops.
//
// Task tokens (.waitForTaskToken) are single-use: the first of
// SendTaskSuccess, SendTaskFailure, TimeoutSeconds and HeartbeatSeconds to
// arrive settles the task; later callbacks get TaskTimedOut, unknown tokens
// InvalidToken. SendTaskHeartbeat restarts the heartbeat timer.
//
// Errors are matched as AWS documents: States.ALL matches everything but
// States.Runtime (never retried nor caught) and States.DataLimitExceeded;
// States.TaskFailed matches everything but those and the timeouts;
// States.Timeout also matches States.HeartbeatTimeout. A task that misses
// its heartbeat fails, as on AWS, with States.Timeout (in its TaskTimedOut
// event, a catcher's output and the execution's error); ErrorEquals
// ["States.HeartbeatTimeout"] matches it too, and only it. The error output
// a catcher receives is {"Error", "Cause"}, Cause omitted when empty.
//
// Time comes from a clock.Clock. With a *clock.Virtual the executor reports
// when it is busy, so AutoAdvance skips to the next timer as soon as every
// execution is blocked: a 15-minute callback timeout or a one-hour Wait
// completes at once. A running task handler counts as busy (its work takes
// no virtual time) unless it waits inside Blocked. A Task without
// TimeoutSeconds has no timer: AWS's default of 99,999,999 seconds outlasts
// an execution's one-year limit.
//
// All methods of Service are safe for concurrent use.
package sfn
