package asl

import (
	"fmt"
	"slices"
)

// Predefined error names.
const (
	ErrAll                = "States.ALL"
	ErrTimeout            = "States.Timeout"
	ErrHeartbeatTimeout   = "States.HeartbeatTimeout"
	ErrTaskFailed         = "States.TaskFailed"
	ErrPermissions        = "States.Permissions"
	ErrResultPathMatch    = "States.ResultPathMatchFailure"
	ErrParameterPath      = "States.ParameterPathFailure"
	ErrBranchFailed       = "States.BranchFailed"
	ErrNoChoiceMatched    = "States.NoChoiceMatched"
	ErrIntrinsicFailure   = "States.IntrinsicFailure"
	ErrRuntime            = "States.Runtime"
	ErrDataLimitExceeded  = "States.DataLimitExceeded"
	ErrItemReaderFailed   = "States.ItemReaderFailed"
	ErrExceedToleratedMax = "States.ExceedToleratedFailureThreshold"
)

// Error is a failure inside an execution, named the way ASL names errors.
// Retriers and catchers match on Name; Cause is the human-readable detail.
type Error struct {
	Name  string
	Cause string
	// Heartbeat marks a States.Timeout that a missed heartbeat caused. AWS
	// reports it as States.Timeout (in the history, a catcher's output and
	// the execution's error) and lets ErrorEquals ["States.HeartbeatTimeout"]
	// match it as well; see MatchedBy.
	Heartbeat bool
}

// HeartbeatTimeout is the error of a task that missed its heartbeat.
func HeartbeatTimeout() *Error { return &Error{Name: ErrTimeout, Heartbeat: true} }

// MatchedBy reports whether a retrier's or catcher's ErrorEquals matches e:
// Matches on its name, and States.HeartbeatTimeout for a missed heartbeat.
func (e *Error) MatchedBy(errorEquals []string) bool {
	if e.Heartbeat && slices.Contains(errorEquals, ErrHeartbeatTimeout) {
		return true
	}
	return Matches(errorEquals, e.Name)
}

func (e *Error) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// Runtimef returns a States.Runtime error: a failure the interpreter could
// not process, such as a path that selects nothing. AWS documents these as
// neither retriable nor catchable.
func Runtimef(format string, args ...any) *Error {
	return &Error{Name: ErrRuntime, Cause: fmt.Sprintf(format, args...)}
}

// Terminal reports whether an error always fails the execution: States.Runtime
// is never retried nor caught.
func Terminal(name string) bool { return name == ErrRuntime }

// Matches implements the ErrorEquals rules of AWS Step Functions:
//   - a name matches itself;
//   - States.ALL matches every error but States.Runtime and
//     States.DataLimitExceeded;
//   - States.TaskFailed matches every error but those and the timeouts
//     (States.Timeout, States.HeartbeatTimeout);
//   - States.Timeout also matches States.HeartbeatTimeout, which AWS
//     documents as a Task failing to heartbeat in time.
func Matches(errorEquals []string, name string) bool {
	if Terminal(name) {
		return false
	}
	for _, e := range errorEquals {
		switch {
		case e == name:
			return true
		case e == ErrAll:
			if name != ErrDataLimitExceeded {
				return true
			}
		case e == ErrTaskFailed:
			if name != ErrTimeout && name != ErrHeartbeatTimeout && name != ErrDataLimitExceeded {
				return true
			}
		case e == ErrTimeout && name == ErrHeartbeatTimeout:
			return true
		}
	}
	return false
}
