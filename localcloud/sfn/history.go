package sfn

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// HistoryEvent is one event of an execution's history, as returned by
// GetExecutionHistory.
type HistoryEvent struct {
	ID              int64
	PreviousEventID int64
	Timestamp       time.Time
	Type            string
	Details         EventDetails
}

// EventDetails holds the fields of the event's details object; which ones
// are set depends on the event type (e.g. Name and Input for *StateEntered,
// Error and Cause for TaskFailed). JSON values (Input, Output, Parameters)
// are JSON text.
type EventDetails struct {
	Name               string `json:"name,omitempty"`
	Input              string `json:"input,omitempty"`
	Output             string `json:"output,omitempty"`
	Error              string `json:"error,omitempty"`
	Cause              string `json:"cause,omitempty"`
	ResourceType       string `json:"resourceType,omitempty"`
	Resource           string `json:"resource,omitempty"`
	Region             string `json:"region,omitempty"`
	Parameters         string `json:"parameters,omitempty"`
	RoleArn            string `json:"roleArn,omitempty"`
	TimeoutInSeconds   *int64 `json:"timeoutInSeconds,omitempty"`
	HeartbeatInSeconds *int64 `json:"heartbeatInSeconds,omitempty"`
	Index              *int   `json:"index,omitempty"`
	Length             *int   `json:"length,omitempty"`
}

// Event types, as in the API.
const (
	EventExecutionStarted      = "ExecutionStarted"
	EventExecutionSucceeded    = "ExecutionSucceeded"
	EventExecutionFailed       = "ExecutionFailed"
	EventExecutionAborted      = "ExecutionAborted"
	EventExecutionTimedOut     = "ExecutionTimedOut"
	EventTaskScheduled         = "TaskScheduled"
	EventTaskStarted           = "TaskStarted"
	EventTaskSubmitted         = "TaskSubmitted"
	EventTaskSucceeded         = "TaskSucceeded"
	EventTaskFailed            = "TaskFailed"
	EventTaskTimedOut          = "TaskTimedOut"
	EventLambdaScheduled       = "LambdaFunctionScheduled"
	EventLambdaStarted         = "LambdaFunctionStarted"
	EventLambdaSucceeded       = "LambdaFunctionSucceeded"
	EventLambdaFailed          = "LambdaFunctionFailed"
	EventLambdaTimedOut        = "LambdaFunctionTimedOut"
	EventMapStateStarted       = "MapStateStarted"
	EventMapStateSucceeded     = "MapStateSucceeded"
	EventMapStateFailed        = "MapStateFailed"
	EventMapIterationStarted   = "MapIterationStarted"
	EventMapIterationSucceeded = "MapIterationSucceeded"
	EventMapIterationFailed    = "MapIterationFailed"
	EventMapIterationAborted   = "MapIterationAborted"
	EventParallelStarted       = "ParallelStateStarted"
	EventParallelSucceeded     = "ParallelStateSucceeded"
	EventParallelFailed        = "ParallelStateFailed"
)

// stateEvent returns the event type for entering ("Entered"), leaving
// ("Exited") or aborting ("Aborted") a state of the given type.
func stateEvent(stateType, what string) string { return stateType + "State" + what }

// detailsKey returns the JSON field that carries the details of an event
// type, e.g. "stateEnteredEventDetails" for "TaskStateEntered".
func detailsKey(typ string) string {
	switch {
	case strings.HasSuffix(typ, "StateEntered"):
		return "stateEnteredEventDetails"
	case strings.HasSuffix(typ, "StateExited"):
		return "stateExitedEventDetails"
	}
	switch typ {
	case EventMapStateStarted, EventMapIterationStarted, EventMapIterationSucceeded, EventMapIterationFailed, EventMapIterationAborted:
		return strings.ToLower(typ[:1]) + typ[1:] + "EventDetails"
	case EventParallelStarted, EventParallelSucceeded, EventParallelFailed, EventMapStateSucceeded, EventMapStateFailed, EventLambdaStarted:
		return ""
	}
	if strings.HasSuffix(typ, "StateAborted") {
		return ""
	}
	return strings.ToLower(typ[:1]) + typ[1:] + "EventDetails"
}

// epochSeconds formats a time the way the AWS JSON protocols send
// timestamps: seconds since the epoch with millisecond precision.
type epochSeconds time.Time

func (t epochSeconds) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)), nil
}

// MarshalJSON writes the event in the GetExecutionHistory wire format.
func (e HistoryEvent) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"id":              e.ID,
		"previousEventId": e.PreviousEventID,
		"timestamp":       epochSeconds(e.Timestamp),
		"type":            e.Type,
	}
	if key := detailsKey(e.Type); key != "" {
		d := map[string]any{}
		raw, err := json.Marshal(e.Details)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, err
		}
		if _, ok := d["input"]; ok {
			d["inputDetails"] = map[string]bool{"truncated": false}
		}
		if _, ok := d["output"]; ok {
			d["outputDetails"] = map[string]bool{"truncated": false}
		}
		m[key] = d
	}
	return json.Marshal(m)
}
