package sfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/clubdev/club/localcloud/sfn/asl"
	"github.com/clubdev/club/localcloud/sfn/clock"
)

// Execution statuses.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// Options configure a Service.
type Options struct {
	// Clock is the time source; clock.Real{} if nil. With a *clock.Virtual
	// the executor reports its activity so that AutoAdvance skips idle time.
	Clock clock.Clock
	// Resources maps Task resources to handlers; empty if nil.
	Resources *Resources
	// Region and Account go into ARNs; us-east-1 and 000000000000 if empty.
	Region  string
	Account string
}

// Service is an in-memory Step Functions: it stores state machines, runs
// their executions and keeps every execution's history for the life of the
// process. All methods are safe for concurrent use.
type Service struct {
	clk     clock.Clock
	act     activity
	res     *Resources
	region  string
	account string
	tokens  *tokenRegistry
	root    *cancelScope
	wg      sync.WaitGroup
	// journal keeps executions across restarts (persist.go); suspended
	// stops it, and history, from recording anything more.
	journal   Journal
	suspended atomic.Bool

	mu         sync.RWMutex
	machines   map[string]*stateMachine // by ARN
	executions map[string]*execution    // by ARN
	byMachine  map[string][]*execution  // by state machine ARN, in start order
	closed     bool
}

type stateMachine struct {
	arn        string
	name       string
	definition string
	def        *asl.Definition
	roleArn    string
	typ        string
	created    time.Time
	updated    time.Time
	revision   string
	tags       map[string]string
}

// New returns a Service.
func New(opts Options) *Service {
	s := &Service{
		clk: opts.Clock, res: opts.Resources, region: opts.Region, account: opts.Account,
		tokens: newTokenRegistry(), root: newScope(context.Background()),
		machines: map[string]*stateMachine{}, executions: map[string]*execution{}, byMachine: map[string][]*execution{},
	}
	if s.clk == nil {
		s.clk = clock.Real{}
	}
	s.act = noActivity{}
	if a, ok := s.clk.(activity); ok {
		s.act = a
	}
	if s.res == nil {
		s.res = NewResources()
	}
	if s.region == "" {
		s.region = "us-east-1"
	}
	if s.account == "" {
		s.account = "000000000000"
	}
	return s
}

// Resources returns the registry of task handlers.
func (s *Service) Resources() *Resources { return s.res }

// Close aborts every running execution and waits for them to end.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	running := make([]*execution, 0)
	for _, x := range s.executions {
		running = append(running, x)
	}
	s.mu.Unlock()
	for _, x := range running {
		x.abort(abortReason{status: StatusAborted, cause: "the local Step Functions service stopped"})
	}
	s.wg.Wait()
}

// StateMachine describes a state machine.
type StateMachine struct {
	ARN          string
	Name         string
	Definition   string
	RoleArn      string
	Type         string
	Status       string
	CreationDate time.Time
	UpdateDate   time.Time
	RevisionID   string
}

func (sm *stateMachine) describe() StateMachine {
	return StateMachine{ARN: sm.arn, Name: sm.name, Definition: sm.definition, RoleArn: sm.roleArn, Type: sm.typ,
		Status: "ACTIVE", CreationDate: sm.created, UpdateDate: sm.updated, RevisionID: sm.revision}
}

// CreateStateMachineInput is the request of CreateStateMachine.
type CreateStateMachineInput struct {
	Name       string
	Definition string
	RoleArn    string
	Type       string // STANDARD (default); EXPRESS is refused
	Tags       map[string]string
}

// nameRE rejects what AWS rejects in state machine and execution names:
// whitespace, brackets, wildcards and the listed special characters.
var nameRE = regexp.MustCompile("^[^\\s<>{}\\[\\]?*\"#%\\\\^|~`$&,;:/\\x00-\\x1f\\x7f-\\x9f]{1,80}$")

// ValidateDefinition parses a definition and checks that every Task resource
// has a handler. It returns nil or an *asl.DefinitionError.
func (s *Service) ValidateDefinition(definition string) error {
	_, err := s.compile(definition)
	return err
}

func (s *Service) compile(definition string) (*asl.Definition, error) {
	def, err := asl.Parse([]byte(definition))
	if err != nil {
		return nil, err
	}
	var diags []asl.Diagnostic
	def.Walk(func(st *asl.State, loc string) {
		if st.Type != asl.TypeTask {
			return
		}
		h, ok := s.res.Lookup(st.Resource)
		if !ok {
			diags = append(diags, asl.Diagnostic{Code: asl.CodeSchema, Location: loc + "/Resource",
				Message: fmt.Sprintf("The resource %q is not supported by the local Step Functions executor", st.Resource)})
			return
		}
		if pc, ok := h.(ParameterChecker); ok && st.Parameters != nil {
			if err := pc.CheckParameters(st.Resource, st.Parameters.Fields()); err != nil {
				diags = append(diags, asl.Diagnostic{Code: asl.CodeSchema, Location: loc + "/Parameters", Message: err.Error()})
			}
		}
	})
	if len(diags) > 0 {
		return nil, &asl.DefinitionError{Diagnostics: diags}
	}
	return def, nil
}

func definitionError(err error) error {
	var de *asl.DefinitionError
	if errors.As(err, &de) {
		return &APIError{Code: CodeInvalidDefinition, Message: de.Error()}
	}
	return err
}

// CreateStateMachine validates and stores a state machine. As on AWS, it is
// idempotent: the same name with the same definition and role returns the
// existing machine; a different one is StateMachineAlreadyExists.
func (s *Service) CreateStateMachine(_ context.Context, in CreateStateMachineInput) (StateMachine, error) {
	if !nameRE.MatchString(in.Name) {
		return StateMachine{}, apiErrorf(CodeInvalidName, "Invalid Name: '%s'", in.Name)
	}
	switch in.Type {
	case "", "STANDARD":
	case "EXPRESS":
		return StateMachine{}, apiErrorf(CodeStateMachineTypeNotSupp, "EXPRESS state machines are not supported by the local executor; use STANDARD")
	default:
		return StateMachine{}, apiErrorf(CodeValidation, "1 validation error detected: Value '%s' at 'type' failed to satisfy constraint: Member must satisfy enum value set: [STANDARD, EXPRESS]", in.Type)
	}
	def, err := s.compile(in.Definition)
	if err != nil {
		return StateMachine{}, definitionError(err)
	}
	arn := s.machineARN(in.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.machines[arn]; ok {
		if old.definition == in.Definition && old.roleArn == in.RoleArn {
			return old.describe(), nil
		}
		return StateMachine{}, apiErrorf(CodeStateMachineAlreadyExists, "State Machine Already Exists: '%s'", arn)
	}
	now := s.clk.Now()
	sm := &stateMachine{arn: arn, name: in.Name, definition: in.Definition, def: def, roleArn: in.RoleArn,
		typ: "STANDARD", created: now, updated: now, revision: uuid.NewString(), tags: map[string]string{}}
	for k, v := range in.Tags {
		sm.tags[k] = v
	}
	s.machines[arn] = sm
	return sm.describe(), nil
}

// UpdateStateMachine replaces the definition and/or role. Running
// executions keep the definition they started with.
func (s *Service) UpdateStateMachine(_ context.Context, arn string, definition, roleArn *string) (StateMachine, error) {
	var def *asl.Definition
	if definition != nil {
		var err error
		if def, err = s.compile(*definition); err != nil {
			return StateMachine{}, definitionError(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.machineLocked(arn)
	if err != nil {
		return StateMachine{}, err
	}
	sm := *old
	if def != nil {
		sm.definition, sm.def = *definition, def
	}
	if roleArn != nil {
		sm.roleArn = *roleArn
	}
	sm.updated = s.clk.Now()
	sm.revision = uuid.NewString()
	s.machines[arn] = &sm
	return sm.describe(), nil
}

// DescribeStateMachine returns a state machine.
func (s *Service) DescribeStateMachine(_ context.Context, arn string) (StateMachine, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sm, err := s.machineLocked(arn)
	if err != nil {
		return StateMachine{}, err
	}
	return sm.describe(), nil
}

// ListStateMachines returns every state machine, sorted by name.
func (s *Service) ListStateMachines(context.Context) []StateMachine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]StateMachine, 0, len(s.machines))
	for _, sm := range s.machines {
		out = append(out, sm.describe())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteStateMachine removes a state machine. Its executions keep running
// and stay readable, as on AWS.
func (s *Service) DeleteStateMachine(_ context.Context, arn string) error {
	if err := s.checkMachineARN(arn); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.machines, arn)
	return nil
}

// TagResource adds tags to a state machine.
func (s *Service) TagResource(_ context.Context, arn string, tags map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, err := s.machineLocked(arn)
	if err != nil {
		return &APIError{Code: CodeResourceNotFound, Message: err.Error()}
	}
	for k, v := range tags {
		sm.tags[k] = v
	}
	return nil
}

// UntagResource removes tags from a state machine.
func (s *Service) UntagResource(_ context.Context, arn string, keys []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, err := s.machineLocked(arn)
	if err != nil {
		return &APIError{Code: CodeResourceNotFound, Message: err.Error()}
	}
	for _, k := range keys {
		delete(sm.tags, k)
	}
	return nil
}

// ListTagsForResource returns the tags of a state machine.
func (s *Service) ListTagsForResource(_ context.Context, arn string) (map[string]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sm, err := s.machineLocked(arn)
	if err != nil {
		return nil, &APIError{Code: CodeResourceNotFound, Message: err.Error()}
	}
	out := make(map[string]string, len(sm.tags))
	for k, v := range sm.tags {
		out[k] = v
	}
	return out, nil
}

func (s *Service) machineARN(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", s.region, s.account, name)
}

func (s *Service) executionARN(machineName, name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", s.region, s.account, machineName, name)
}

func (s *Service) checkMachineARN(arn string) error {
	prefix := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:", s.region, s.account)
	if !strings.HasPrefix(arn, prefix) || len(arn) == len(prefix) {
		return apiErrorf(CodeInvalidArn, "Invalid Arn: 'Resource type not valid in this context: %s'", arn)
	}
	return nil
}

func (s *Service) machineLocked(arn string) (*stateMachine, error) {
	if err := s.checkMachineARN(arn); err != nil {
		return nil, err
	}
	sm, ok := s.machines[arn]
	if !ok {
		return nil, apiErrorf(CodeStateMachineDoesNotExist, "State Machine Does Not Exist: '%s'", arn)
	}
	return sm, nil
}

func (s *Service) execution(arn string) (*execution, error) {
	prefix := fmt.Sprintf("arn:aws:states:%s:%s:execution:", s.region, s.account)
	if !strings.HasPrefix(arn, prefix) {
		return nil, apiErrorf(CodeInvalidArn, "Invalid Arn: 'Resource type not valid in this context: %s'", arn)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	x, ok := s.executions[arn]
	if !ok {
		return nil, apiErrorf(CodeExecutionDoesNotExist, "Execution Does Not Exist: '%s'", arn)
	}
	return x, nil
}

// StartExecutionInput is the request of StartExecution.
type StartExecutionInput struct {
	StateMachineArn string
	// Name defaults to a random UUID.
	Name string
	// Input is JSON; "{}" if empty.
	Input string
}

// Execution describes an execution.
type Execution struct {
	ARN             string
	StateMachineArn string
	Name            string
	Status          string
	StartDate       time.Time
	StopDate        time.Time // zero while running
	Input           string
	Output          string // set when SUCCEEDED
	Error           string // set when FAILED, TIMED_OUT or ABORTED
	Cause           string
}

// StartExecution starts an execution. Names are idempotent as on AWS: the
// same name with the same input while the execution is still running returns
// that execution; a different input, or any input once the execution has
// closed, is ExecutionAlreadyExists.
func (s *Service) StartExecution(_ context.Context, in StartExecutionInput) (Execution, error) {
	name := in.Name
	if name == "" {
		name = uuid.NewString()
	}
	if !nameRE.MatchString(name) {
		return Execution{}, apiErrorf(CodeInvalidName, "Invalid Name: '%s'", name)
	}
	input := in.Input
	if input == "" {
		input = "{}"
	}
	value, err := asl.DecodeJSON([]byte(input))
	if err != nil {
		return Execution{}, apiErrorf(CodeInvalidExecutionInput, "Invalid State Machine Execution Input: '%v'", err)
	}
	if len(input) > 256*1024 {
		return Execution{}, apiErrorf(CodeInvalidExecutionInput, "The input exceeds the 256 KiB limit")
	}
	canonical := compactJSON(input)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Execution{}, apiErrorf(CodeValidation, "the service is closed")
	}
	sm, err := s.machineLocked(in.StateMachineArn)
	if err != nil {
		return Execution{}, err
	}
	arn := s.executionARN(sm.name, name)
	if old, ok := s.executions[arn]; ok {
		desc := old.describe()
		if desc.Status == StatusRunning && old.canonicalInput == canonical {
			return desc, nil
		}
		return Execution{}, apiErrorf(CodeExecutionAlreadyExists, "Execution Already Exists: '%s'", arn)
	}
	x := newExecution(s, sm, arn, name, input, canonical, value)
	s.executions[arn] = x
	s.byMachine[sm.arn] = append(s.byMachine[sm.arn], x)
	s.record(JournalEntry{Kind: EntryStart, Execution: arn, Start: &StartRecord{
		StateMachine: sm.arn, MachineName: sm.name, Definition: sm.definition, RoleArn: sm.roleArn,
		Name: name, Input: input, StartDate: x.start,
	}})
	s.wg.Add(1)
	s.act.Hold() // released when the execution ends
	go x.run()
	return x.describe(), nil
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// DescribeExecution returns an execution.
func (s *Service) DescribeExecution(_ context.Context, arn string) (Execution, error) {
	x, err := s.execution(arn)
	if err != nil {
		return Execution{}, err
	}
	return x.describe(), nil
}

// DescribeStateMachineForExecution returns the state machine an execution
// runs, with the definition it started with.
func (s *Service) DescribeStateMachineForExecution(_ context.Context, arn string) (StateMachine, error) {
	x, err := s.execution(arn)
	if err != nil {
		return StateMachine{}, err
	}
	return x.sm.describe(), nil
}

// ListExecutions returns the executions of a state machine, newest first,
// optionally only those with the given status.
func (s *Service) ListExecutions(_ context.Context, machineArn, status string) ([]Execution, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, err := s.machineLocked(machineArn); err != nil {
		return nil, err
	}
	list := s.byMachine[machineArn]
	out := make([]Execution, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- {
		d := list[i].describe()
		if status == "" || d.Status == status {
			out = append(out, d)
		}
	}
	return out, nil
}

// GetExecutionHistory returns a copy of the history of an execution, oldest
// event first.
func (s *Service) GetExecutionHistory(_ context.Context, arn string) ([]HistoryEvent, error) {
	x, err := s.execution(arn)
	if err != nil {
		return nil, err
	}
	return x.history(), nil
}

// StopExecution aborts a running execution and waits until it has ended,
// so that a following DescribeExecution reads ABORTED. Stopping a closed
// execution changes nothing.
func (s *Service) StopExecution(ctx context.Context, arn, errName, cause string) (Execution, error) {
	x, err := s.execution(arn)
	if err != nil {
		return Execution{}, err
	}
	x.abort(abortReason{status: StatusAborted, err: errName, cause: cause})
	select {
	case <-x.done:
	case <-ctx.Done():
		return Execution{}, ctx.Err()
	}
	return x.describe(), nil
}

// WaitForCompletion blocks until the execution has ended, or ctx is done.
func (s *Service) WaitForCompletion(ctx context.Context, arn string) (Execution, error) {
	x, err := s.execution(arn)
	if err != nil {
		return Execution{}, err
	}
	select {
	case <-x.done:
		return x.describe(), nil
	case <-ctx.Done():
		return x.describe(), fmt.Errorf("wait for %s: %w", arn, ctx.Err())
	}
}

// SendTaskSuccess completes the task of a token with output (JSON).
func (s *Service) SendTaskSuccess(_ context.Context, token, output string) error {
	out, err := callbackOutput(output)
	if err != nil {
		return err
	}
	return s.tokens.deliver(token, wake{kind: wakeCallbackSuccess, output: out})
}

// SendTaskFailure fails the task of a token with an error name and cause,
// which the state's Retry and Catch match.
func (s *Service) SendTaskFailure(_ context.Context, token, errName, cause string) error {
	return s.tokens.deliver(token, wake{kind: wakeCallbackFailure, err: &TaskError{Name: errName, Cause: cause}})
}

// SendTaskHeartbeat restarts the HeartbeatSeconds timer of a task.
func (s *Service) SendTaskHeartbeat(_ context.Context, token string) error {
	return s.tokens.deliver(token, wake{kind: wakeHeartbeat})
}

// formatTime formats a time for the context object, as AWS does.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
