package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/asl"
)

// TargetPrefix is the X-Amz-Target prefix of the Step Functions API.
const TargetPrefix = "AWSStepFunctions."

// maxBody bounds a request: definitions are limited to 1 MiB by AWS.
const maxBody = 2 << 20

// Handler is the HTTP front of a *sfn.Service.
type Handler struct {
	svc *sfn.Service
	ops map[string]operation
}

type operation func(r *http.Request, body []byte) (any, error)

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a handler serving svc.
func NewHandler(svc *sfn.Service) *Handler {
	h := &Handler{svc: svc}
	h.ops = map[string]operation{
		"CreateStateMachine":               h.createStateMachine,
		"UpdateStateMachine":               h.updateStateMachine,
		"DescribeStateMachine":             h.describeStateMachine,
		"ListStateMachines":                h.listStateMachines,
		"DeleteStateMachine":               h.deleteStateMachine,
		"ValidateStateMachineDefinition":   h.validateDefinition,
		"StartExecution":                   h.startExecution,
		"StartSyncExecution":               h.startSyncExecution,
		"DescribeExecution":                h.describeExecution,
		"DescribeStateMachineForExecution": h.describeStateMachineForExecution,
		"ListExecutions":                   h.listExecutions,
		"GetExecutionHistory":              h.getExecutionHistory,
		"StopExecution":                    h.stopExecution,
		"SendTaskSuccess":                  h.sendTaskSuccess,
		"SendTaskFailure":                  h.sendTaskFailure,
		"SendTaskHeartbeat":                h.sendTaskHeartbeat,
		"TagResource":                      h.tagResource,
		"UntagResource":                    h.untagResource,
		"ListTagsForResource":              h.listTagsForResource,
	}
	return h
}

// ServeHTTP dispatches on X-Amz-Target.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-amzn-RequestId", uuid.NewString())
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "InvalidAction", "the Step Functions API accepts POST only")
		return
	}
	name, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), TargetPrefix)
	op, known := h.ops[name]
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", err.Error())
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if why := refusal(name, body); ok && why != "" {
		writeError(w, http.StatusBadRequest, CodeUnsupported, why)
		return
	}
	if !ok || !known {
		writeError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("unknown operation %q", r.Header.Get("X-Amz-Target")))
		return
	}
	out, err := op(r, body)
	if err != nil {
		var apiErr *sfn.APIError
		switch {
		case errors.As(err, &apiErr):
			writeError(w, http.StatusBadRequest, apiErr.Code, apiErr.Message)
		case errors.Is(err, errSerialization):
			writeError(w, http.StatusBadRequest, "SerializationException", err.Error())
		default:
			writeError(w, http.StatusInternalServerError, "InternalFailure", err.Error())
		}
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		// The status line is already sent; the client sees a truncated body.
		return
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

var errSerialization = errors.New("cannot decode the request")

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %v", errSerialization, err)
	}
	return nil
}

func required(name, value string) error {
	if value == "" {
		return &sfn.APIError{Code: sfn.CodeValidation,
			Message: fmt.Sprintf("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", name)}
	}
	return nil
}

// epoch encodes a time as epoch seconds with milliseconds, omitted if zero.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)), nil
}

func epochPtr(t time.Time) *epoch {
	if t.IsZero() {
		return nil
	}
	e := epoch(t)
	return &e
}

// page returns the slice of n items that a maxResults/nextToken pair asks
// for, and the token of the next page.
func page(n, maxResults int, token string) (start, end int, next string, err error) {
	if maxResults <= 0 || maxResults > 1000 {
		maxResults = 100
	}
	if token != "" {
		raw, derr := base64.RawURLEncoding.DecodeString(token)
		if derr == nil {
			start, derr = strconv.Atoi(string(raw))
		}
		if derr != nil || start < 0 || start > n {
			return 0, 0, "", &sfn.APIError{Code: sfn.CodeInvalidToken, Message: "Invalid Token: the nextToken is not valid"}
		}
	}
	end = min(start+maxResults, n)
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return start, end, next, nil
}

type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (h *Handler) createStateMachine(r *http.Request, body []byte) (any, error) {
	var in struct {
		Name       string `json:"name"`
		Definition string `json:"definition"`
		RoleArn    string `json:"roleArn"`
		Type       string `json:"type"`
		Tags       []tag  `json:"tags"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	for _, f := range [][2]string{{"name", in.Name}, {"definition", in.Definition}, {"roleArn", in.RoleArn}} {
		if err := required(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[t.Key] = t.Value
	}
	sm, err := h.svc.CreateStateMachine(r.Context(), sfn.CreateStateMachineInput{
		Name: in.Name, Definition: in.Definition, RoleArn: in.RoleArn, Type: in.Type, Tags: tags})
	if err != nil {
		return nil, err
	}
	return map[string]any{"stateMachineArn": sm.ARN, "creationDate": epoch(sm.CreationDate)}, nil
}

func (h *Handler) updateStateMachine(r *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string  `json:"stateMachineArn"`
		Definition      *string `json:"definition"`
		RoleArn         *string `json:"roleArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("stateMachineArn", in.StateMachineArn); err != nil {
		return nil, err
	}
	if in.Definition == nil && in.RoleArn == nil {
		return nil, &sfn.APIError{Code: sfn.CodeMissingRequiredParameter, Message: "Either the definition or the roleArn must be specified"}
	}
	sm, err := h.svc.UpdateStateMachine(r.Context(), in.StateMachineArn, in.Definition, in.RoleArn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"updateDate": epoch(sm.UpdateDate), "revisionId": sm.RevisionID}, nil
}

type machineArnRequest struct {
	StateMachineArn string `json:"stateMachineArn"`
}

func (h *Handler) machineArn(body []byte) (string, error) {
	var in machineArnRequest
	if err := decode(body, &in); err != nil {
		return "", err
	}
	return in.StateMachineArn, required("stateMachineArn", in.StateMachineArn)
}

func describeMachine(sm sfn.StateMachine) map[string]any {
	return map[string]any{
		"stateMachineArn": sm.ARN, "name": sm.Name, "status": sm.Status, "definition": sm.Definition,
		"roleArn": sm.RoleArn, "type": sm.Type, "creationDate": epoch(sm.CreationDate), "revisionId": sm.RevisionID,
		"loggingConfiguration": map[string]any{"level": "OFF", "includeExecutionData": false},
		"tracingConfiguration": map[string]any{"enabled": false},
	}
}

func (h *Handler) describeStateMachine(r *http.Request, body []byte) (any, error) {
	arn, err := h.machineArn(body)
	if err != nil {
		return nil, err
	}
	sm, err := h.svc.DescribeStateMachine(r.Context(), arn)
	if err != nil {
		return nil, err
	}
	return describeMachine(sm), nil
}

type listRequest struct {
	MaxResults int    `json:"maxResults"`
	NextToken  string `json:"nextToken"`
}

func (h *Handler) listStateMachines(r *http.Request, body []byte) (any, error) {
	var in listRequest
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	all := h.svc.ListStateMachines(r.Context())
	start, end, next, err := page(len(all), in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, end-start)
	for _, sm := range all[start:end] {
		items = append(items, map[string]any{"stateMachineArn": sm.ARN, "name": sm.Name, "type": sm.Type, "creationDate": epoch(sm.CreationDate)})
	}
	out := map[string]any{"stateMachines": items}
	if next != "" {
		out["nextToken"] = next
	}
	return out, nil
}

func (h *Handler) deleteStateMachine(r *http.Request, body []byte) (any, error) {
	arn, err := h.machineArn(body)
	if err != nil {
		return nil, err
	}
	return struct{}{}, h.svc.DeleteStateMachine(r.Context(), arn)
}

func (h *Handler) validateDefinition(_ *http.Request, body []byte) (any, error) {
	var in struct {
		Definition string `json:"definition"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("definition", in.Definition); err != nil {
		return nil, err
	}
	err := h.svc.ValidateDefinition(in.Definition)
	var de *asl.DefinitionError
	if err != nil && !errors.As(err, &de) {
		return nil, err
	}
	diags := []map[string]string{}
	result := "OK"
	if de != nil {
		result = "FAIL"
		for _, d := range de.Diagnostics {
			diag := map[string]string{"severity": "ERROR", "code": d.Code, "message": d.Message}
			if d.Location != "" {
				// AWS sends no location for a whole-machine problem
				// such as MISSING_END_STATE.
				diag["location"] = d.Location
			}
			diags = append(diags, diag)
		}
	}
	return map[string]any{"result": result, "diagnostics": diags, "truncated": false}, nil
}

func (h *Handler) startExecution(r *http.Request, body []byte) (any, error) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		Name            string `json:"name"`
		Input           string `json:"input"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("stateMachineArn", in.StateMachineArn); err != nil {
		return nil, err
	}
	x, err := h.svc.StartExecution(r.Context(), sfn.StartExecutionInput{StateMachineArn: in.StateMachineArn, Name: in.Name, Input: in.Input})
	if err != nil {
		return nil, err
	}
	return map[string]any{"executionArn": x.ARN, "startDate": epoch(x.StartDate)}, nil
}

func (h *Handler) startSyncExecution(*http.Request, []byte) (any, error) {
	return nil, &sfn.APIError{Code: sfn.CodeStateMachineTypeNotSupp,
		Message: "StartSyncExecution runs EXPRESS state machines, which the local executor does not support; use StartExecution"}
}

type executionArnRequest struct {
	ExecutionArn string `json:"executionArn"`
}

func executionArn(body []byte) (string, error) {
	var in executionArnRequest
	if err := decode(body, &in); err != nil {
		return "", err
	}
	return in.ExecutionArn, required("executionArn", in.ExecutionArn)
}

func (h *Handler) describeExecution(r *http.Request, body []byte) (any, error) {
	arn, err := executionArn(body)
	if err != nil {
		return nil, err
	}
	x, err := h.svc.DescribeExecution(r.Context(), arn)
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"executionArn": x.ARN, "stateMachineArn": x.StateMachineArn, "name": x.Name, "status": x.Status,
		"startDate": epoch(x.StartDate), "input": x.Input, "inputDetails": map[string]bool{"included": true},
		"redriveCount": 0, "redriveStatus": "NOT_REDRIVABLE",
	}
	if !x.StopDate.IsZero() {
		out["stopDate"] = epoch(x.StopDate)
	}
	if x.Status == sfn.StatusSucceeded {
		out["output"] = x.Output
		out["outputDetails"] = map[string]bool{"included": true}
	}
	if x.Error != "" {
		out["error"] = x.Error
	}
	if x.Cause != "" {
		out["cause"] = x.Cause
	}
	return out, nil
}

func (h *Handler) describeStateMachineForExecution(r *http.Request, body []byte) (any, error) {
	arn, err := executionArn(body)
	if err != nil {
		return nil, err
	}
	sm, err := h.svc.DescribeStateMachineForExecution(r.Context(), arn)
	if err != nil {
		return nil, err
	}
	return map[string]any{"stateMachineArn": sm.ARN, "name": sm.Name, "definition": sm.Definition,
		"roleArn": sm.RoleArn, "updateDate": epoch(sm.UpdateDate), "revisionId": sm.RevisionID}, nil
}

func (h *Handler) listExecutions(r *http.Request, body []byte) (any, error) {
	var in struct {
		listRequest
		StateMachineArn string `json:"stateMachineArn"`
		StatusFilter    string `json:"statusFilter"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("stateMachineArn", in.StateMachineArn); err != nil {
		return nil, err
	}
	all, err := h.svc.ListExecutions(r.Context(), in.StateMachineArn, in.StatusFilter)
	if err != nil {
		return nil, err
	}
	start, end, next, err := page(len(all), in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, end-start)
	for _, x := range all[start:end] {
		item := map[string]any{"executionArn": x.ARN, "stateMachineArn": x.StateMachineArn, "name": x.Name,
			"status": x.Status, "startDate": epoch(x.StartDate)}
		if p := epochPtr(x.StopDate); p != nil {
			item["stopDate"] = p
		}
		items = append(items, item)
	}
	out := map[string]any{"executions": items}
	if next != "" {
		out["nextToken"] = next
	}
	return out, nil
}

func (h *Handler) getExecutionHistory(r *http.Request, body []byte) (any, error) {
	var in struct {
		listRequest
		ExecutionArn         string `json:"executionArn"`
		ReverseOrder         bool   `json:"reverseOrder"`
		IncludeExecutionData *bool  `json:"includeExecutionData"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("executionArn", in.ExecutionArn); err != nil {
		return nil, err
	}
	events, err := h.svc.GetExecutionHistory(r.Context(), in.ExecutionArn)
	if err != nil {
		return nil, err
	}
	if in.ReverseOrder {
		sort.SliceStable(events, func(i, j int) bool { return events[i].ID > events[j].ID })
	}
	if in.IncludeExecutionData != nil && !*in.IncludeExecutionData {
		for i := range events {
			d := &events[i].Details
			d.Input, d.Output, d.Parameters = "", "", ""
		}
	}
	start, end, next, err := page(len(events), in.MaxResults, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"events": events[start:end]}
	if next != "" {
		out["nextToken"] = next
	}
	return out, nil
}

func (h *Handler) stopExecution(r *http.Request, body []byte) (any, error) {
	var in struct {
		ExecutionArn string `json:"executionArn"`
		Error        string `json:"error"`
		Cause        string `json:"cause"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := required("executionArn", in.ExecutionArn); err != nil {
		return nil, err
	}
	x, err := h.svc.StopExecution(r.Context(), in.ExecutionArn, in.Error, in.Cause)
	if err != nil {
		return nil, err
	}
	return map[string]any{"stopDate": epoch(x.StopDate)}, nil
}

type taskRequest struct {
	TaskToken string `json:"taskToken"`
	Output    string `json:"output"`
	Error     string `json:"error"`
	Cause     string `json:"cause"`
}

func taskInput(body []byte) (taskRequest, error) {
	var in taskRequest
	if err := decode(body, &in); err != nil {
		return in, err
	}
	return in, required("taskToken", in.TaskToken)
}

func (h *Handler) sendTaskSuccess(r *http.Request, body []byte) (any, error) {
	in, err := taskInput(body)
	if err != nil {
		return nil, err
	}
	if err := required("output", in.Output); err != nil {
		return nil, err
	}
	return struct{}{}, h.svc.SendTaskSuccess(r.Context(), in.TaskToken, in.Output)
}

func (h *Handler) sendTaskFailure(r *http.Request, body []byte) (any, error) {
	in, err := taskInput(body)
	if err != nil {
		return nil, err
	}
	return struct{}{}, h.svc.SendTaskFailure(r.Context(), in.TaskToken, in.Error, in.Cause)
}

func (h *Handler) sendTaskHeartbeat(r *http.Request, body []byte) (any, error) {
	in, err := taskInput(body)
	if err != nil {
		return nil, err
	}
	return struct{}{}, h.svc.SendTaskHeartbeat(r.Context(), in.TaskToken)
}

func (h *Handler) tagResource(r *http.Request, body []byte) (any, error) {
	var in struct {
		ResourceArn string `json:"resourceArn"`
		Tags        []tag  `json:"tags"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[t.Key] = t.Value
	}
	return struct{}{}, h.svc.TagResource(r.Context(), in.ResourceArn, tags)
}

func (h *Handler) untagResource(r *http.Request, body []byte) (any, error) {
	var in struct {
		ResourceArn string   `json:"resourceArn"`
		TagKeys     []string `json:"tagKeys"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	return struct{}{}, h.svc.UntagResource(r.Context(), in.ResourceArn, in.TagKeys)
}

func (h *Handler) listTagsForResource(r *http.Request, body []byte) (any, error) {
	var in struct {
		ResourceArn string `json:"resourceArn"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	tags, err := h.svc.ListTagsForResource(r.Context(), in.ResourceArn)
	if err != nil {
		return nil, err
	}
	list := make([]tag, 0, len(tags))
	for k, v := range tags {
		list = append(list, tag{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Key < list[j].Key })
	return map[string]any{"tags": list}, nil
}
