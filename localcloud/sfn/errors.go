package sfn

import (
	"errors"
	"fmt"
)

// APIError is an error of the Step Functions API, with the error code AWS
// returns as __type (e.g. "ExecutionDoesNotExist").
type APIError struct {
	Code    string
	Message string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, &APIError{Code: c}) match any error with code c.
func (e *APIError) Is(target error) bool {
	var t *APIError
	return errors.As(target, &t) && t.Code == e.Code && t.Message == ""
}

// Error codes of the API.
const (
	CodeStateMachineDoesNotExist  = "StateMachineDoesNotExist"
	CodeStateMachineAlreadyExists = "StateMachineAlreadyExists"
	CodeStateMachineTypeNotSupp   = "StateMachineTypeNotSupported"
	CodeExecutionDoesNotExist     = "ExecutionDoesNotExist"
	CodeExecutionAlreadyExists    = "ExecutionAlreadyExists"
	CodeInvalidArn                = "InvalidArn"
	CodeInvalidName               = "InvalidName"
	CodeInvalidDefinition         = "InvalidDefinition"
	CodeInvalidExecutionInput     = "InvalidExecutionInput"
	CodeInvalidOutput             = "InvalidOutput"
	CodeInvalidToken              = "InvalidToken"
	CodeTaskDoesNotExist          = "TaskDoesNotExist"
	CodeTaskTimedOut              = "TaskTimedOut"
	CodeValidation                = "ValidationException"
	CodeMissingRequiredParameter  = "MissingRequiredParameter"
	CodeResourceNotFound          = "ResourceNotFound"
)

// ErrCode returns a sentinel for errors.Is checks: errors.Is(err,
// sfn.ErrCode(sfn.CodeExecutionAlreadyExists)).
func ErrCode(code string) error { return &APIError{Code: code} }

func apiErrorf(code, format string, args ...any) *APIError {
	return &APIError{Code: code, Message: fmt.Sprintf(format, args...)}
}
