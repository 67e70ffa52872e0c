package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func functionRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name, attrs: map[string]string{"Arn": r.arn("lambda", "function:"+name)}}, nil
}

type functionProps struct {
	FunctionName                 string
	Description                  string
	CodeUri                      *string
	Handler                      string
	Runtime                      string
	Architectures                []string
	MemorySize                   *intValue
	Timeout                      *intValue
	Environment                  *struct{ Variables map[string]stringValue }
	ReservedConcurrentExecutions *intValue
	Tracing                      string
	Role                         string
	Policies                     json.RawMessage
	Events                       map[string]eventProps

	AutoPublishAlias             ignored
	AutoPublishCodeSha256        ignored
	DeploymentPreference         ignored
	ProvisionedConcurrencyConfig ignored
	VersionDescription           ignored
	DeadLetterQueue              ignored
	EventInvokeConfig            ignored
	EphemeralStorage             ignored
	LoggingConfig                ignored
	RecursiveLoop                ignored
	RuntimeManagementConfig      ignored
	SnapStart                    ignored
	KmsKeyArn                    ignored
	PermissionsBoundary          ignored
	AssumeRolePolicyDocument     ignored
	RolePath                     ignored
	VpcConfig                    ignored
	PropagateTags                ignored
	Tags                         ignored
}

type eventProps struct {
	Type       string
	Properties json.RawMessage
}

// Function defaults, as on AWS.
const (
	defaultMemorySize = 128
	defaultTimeout    = 3 * time.Second
)

func buildFunction(b *builder, in resourceInput) error {
	var p functionProps
	if err := decodeStrict(b.withGlobals("Function", in.props), &p); err != nil {
		return err
	}
	if p.CodeUri == nil || *p.CodeUri == "" {
		return errors.New("CodeUri is required (a local directory)")
	}
	fn := Function{
		Source:              in.id,
		Name:                in.refs.ref,
		ARN:                 in.refs.attrs["Arn"],
		Description:         p.Description,
		CodeDir:             absPath(b.r.opts.Dir, *p.CodeUri),
		Handler:             p.Handler,
		Runtime:             p.Runtime,
		Architectures:       p.Architectures,
		MemorySize:          p.MemorySize.or(defaultMemorySize),
		Timeout:             seconds(p.Timeout.or(int(defaultTimeout / time.Second))),
		Environment:         map[string]string{},
		ReservedConcurrency: p.ReservedConcurrentExecutions.ptr(),
		Tracing:             p.Tracing,
		Role:                p.Role,
		Policies:            p.Policies,
	}
	if len(fn.Architectures) == 0 {
		fn.Architectures = []string{"x86_64"}
	}
	if p.Environment != nil {
		for k, v := range p.Environment.Variables {
			fn.Environment[k] = string(v)
		}
	}
	if m, ok := in.res.Metadata["BuildMethod"].(string); ok {
		fn.BuildMethod = m
	}

	names := make([]string, 0, len(p.Events))
	for name := range p.Events {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ev := p.Events[name]
		if err := b.addFunctionEvent(&fn, name, ev); err != nil {
			return fmt.Errorf("event %s (%s): %w", name, ev.Type, err)
		}
	}
	b.stack.Functions = append(b.stack.Functions, fn)
	return nil
}

// absPath resolves a template-relative path.
func absPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func (b *builder) addFunctionEvent(fn *Function, name string, ev eventProps) error {
	var props any = map[string]any{}
	if len(ev.Properties) > 0 {
		if err := json.Unmarshal(ev.Properties, &props); err != nil {
			return err
		}
	}
	switch ev.Type {
	case "SQS":
		e, err := sqsEvent(name, props)
		if err != nil {
			return err
		}
		fn.SQSEvents = append(fn.SQSEvents, e)
	case "DynamoDB":
		e, err := dynamoDBEvent(name, props)
		if err != nil {
			return err
		}
		fn.DynamoDBEvents = append(fn.DynamoDBEvents, e)
	case "Schedule", "ScheduleV2":
		e, err := scheduleEvent(name, ev.Type, props)
		if err != nil {
			return err
		}
		fn.Schedules = append(fn.Schedules, e)
	case "HttpApi":
		e, apiID, authorizer, err := httpAPIEvent(name, props)
		if err != nil {
			return err
		}
		if apiID == "" {
			refs, err := b.r.resourceRefs(implicitHTTPAPI)
			if err != nil {
				return err
			}
			apiID = refs.ref
		}
		fn.HTTPAPIEvents = append(fn.HTTPAPIEvents, e)
		b.httpAPIEvents = append(b.httpAPIEvents, httpAPIEventRef{
			function: len(b.stack.Functions), // fn is appended next
			event:    len(fn.HTTPAPIEvents) - 1,
			apiID:    apiID,
			explicit: authorizer,
		})
	default:
		return errors.New("unsupported event type")
	}
	return nil
}

// filterProps is FilterCriteria. A pattern is JSON text; a YAML map is
// accepted too and turned into text.
type filterProps struct {
	Filters []struct {
		Pattern jsonText
	}
}

func (f *filterProps) model() *FilterCriteria {
	if f == nil {
		return nil
	}
	fc := &FilterCriteria{}
	for _, flt := range f.Filters {
		fc.Patterns = append(fc.Patterns, string(flt.Pattern))
	}
	return fc
}

const reportBatchItemFailures = "ReportBatchItemFailures"

// reportsItemFailures checks FunctionResponseTypes, whose only value is
// ReportBatchItemFailures.
func reportsItemFailures(types []string) (bool, error) {
	for _, t := range types {
		if t != reportBatchItemFailures {
			return false, fmt.Errorf("FunctionResponseTypes: unsupported value %q (only %s)", t, reportBatchItemFailures)
		}
	}
	return len(types) > 0, nil
}

type sqsEventProps struct {
	Queue                          string
	BatchSize                      *intValue
	MaximumBatchingWindowInSeconds *intValue
	FunctionResponseTypes          []string
	ScalingConfig                  *struct{ MaximumConcurrency intValue }
	Enabled                        *boolValue
	FilterCriteria                 *filterProps
	KmsKeyArn                      ignored
	MetricsConfig                  ignored
}

func sqsEvent(name string, props any) (SQSEvent, error) {
	var p sqsEventProps
	if err := decodeStrict(props, &p); err != nil {
		return SQSEvent{}, err
	}
	if p.Queue == "" {
		return SQSEvent{}, errors.New("Queue is required")
	}
	report, err := reportsItemFailures(p.FunctionResponseTypes)
	if err != nil {
		return SQSEvent{}, err
	}
	e := SQSEvent{
		Name:                    name,
		QueueARN:                p.Queue,
		BatchSize:               p.BatchSize.or(10),
		MaximumBatchingWindow:   seconds(p.MaximumBatchingWindowInSeconds.or(0)),
		ReportBatchItemFailures: report,
		Enabled:                 p.Enabled.or(true),
		FilterCriteria:          p.FilterCriteria.model(),
	}
	// The limits AWS enforces when it creates the mapping.
	if e.BatchSize < 1 || e.BatchSize > 10000 {
		return SQSEvent{}, fmt.Errorf("BatchSize %d: expected 1 to 10000", e.BatchSize)
	}
	if e.BatchSize > 10 && e.MaximumBatchingWindow == 0 {
		return SQSEvent{}, fmt.Errorf("BatchSize %d: above 10 needs MaximumBatchingWindowInSeconds", e.BatchSize)
	}
	if sc := p.ScalingConfig; sc != nil {
		if sc.MaximumConcurrency < 2 || sc.MaximumConcurrency > 1000 {
			return SQSEvent{}, fmt.Errorf("ScalingConfig.MaximumConcurrency %d: expected 2 to 1000", sc.MaximumConcurrency)
		}
		e.MaximumConcurrency = int(sc.MaximumConcurrency)
	}
	return e, nil
}

type dynamoDBEventProps struct {
	Stream                         string
	StartingPosition               string
	BatchSize                      *intValue
	MaximumBatchingWindowInSeconds *intValue
	FilterCriteria                 *filterProps
	BisectBatchOnFunctionError     boolValue
	MaximumRetryAttempts           *intValue
	MaximumRecordAgeInSeconds      *intValue
	DestinationConfig              *struct {
		OnFailure struct {
			Destination string
			Type        string
		}
	}
	FunctionResponseTypes []string
	ParallelizationFactor *intValue
	Enabled               *boolValue
	KmsKeyArn             ignored
	MetricsConfig         ignored
}

func dynamoDBEvent(name string, props any) (DynamoDBEvent, error) {
	var p dynamoDBEventProps
	if err := decodeStrict(props, &p); err != nil {
		return DynamoDBEvent{}, err
	}
	if p.Stream == "" {
		return DynamoDBEvent{}, errors.New("Stream is required")
	}
	switch p.StartingPosition {
	case "TRIM_HORIZON", "LATEST":
	default:
		return DynamoDBEvent{}, fmt.Errorf("StartingPosition %q: expected TRIM_HORIZON or LATEST", p.StartingPosition)
	}
	report, err := reportsItemFailures(p.FunctionResponseTypes)
	if err != nil {
		return DynamoDBEvent{}, err
	}
	e := DynamoDBEvent{
		Name:                       name,
		StreamARN:                  p.Stream,
		StartingPosition:           p.StartingPosition,
		BatchSize:                  p.BatchSize.or(100),
		MaximumBatchingWindow:      seconds(p.MaximumBatchingWindowInSeconds.or(0)),
		FilterCriteria:             p.FilterCriteria.model(),
		BisectBatchOnFunctionError: bool(p.BisectBatchOnFunctionError),
		MaximumRetryAttempts:       p.MaximumRetryAttempts.or(-1),
		ReportBatchItemFailures:    report,
		ParallelizationFactor:      p.ParallelizationFactor.or(1),
		Enabled:                    p.Enabled.or(true),
	}
	if e.BatchSize < 1 || e.BatchSize > 10000 {
		return DynamoDBEvent{}, fmt.Errorf("BatchSize %d: expected 1 to 10000", e.BatchSize)
	}
	if e.MaximumRetryAttempts < -1 || e.MaximumRetryAttempts > 10000 {
		return DynamoDBEvent{}, fmt.Errorf("MaximumRetryAttempts %d: expected -1 to 10000", e.MaximumRetryAttempts)
	}
	if e.ParallelizationFactor < 1 || e.ParallelizationFactor > 10 {
		return DynamoDBEvent{}, fmt.Errorf("ParallelizationFactor %d: expected 1 to 10", e.ParallelizationFactor)
	}
	switch age := p.MaximumRecordAgeInSeconds.or(-1); {
	case age == -1:
	case age >= 60 && age <= 604800:
		e.MaximumRecordAge = seconds(age)
	default:
		return DynamoDBEvent{}, fmt.Errorf("MaximumRecordAgeInSeconds %d: expected -1 or 60 to 604800", age)
	}
	if dc := p.DestinationConfig; dc != nil {
		if dc.OnFailure.Destination == "" {
			return DynamoDBEvent{}, errors.New("DestinationConfig.OnFailure.Destination is required")
		}
		e.OnFailureDestination = dc.OnFailure.Destination
		e.OnFailureType = dc.OnFailure.Type
	}
	return e, nil
}

type scheduleEventProps struct {
	Schedule         string
	Input            *jsonText
	Enabled          *boolValue
	State            string
	Name             string
	Description      string
	DeadLetterConfig ignored
	RetryPolicy      ignored
}

type scheduleV2EventProps struct {
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	Input                      *jsonText
	State                      string
	Name                       string
	Description                string
	GroupName                  ignored
	FlexibleTimeWindow         ignored
	StartDate                  ignored
	EndDate                    ignored
	DeadLetterConfig           ignored
	RetryPolicy                ignored
	KmsKeyArn                  ignored
	RoleArn                    ignored
	PermissionsBoundary        ignored
	OmitName                   ignored
}

func scheduleEvent(name, kind string, props any) (ScheduleEvent, error) {
	e := ScheduleEvent{Name: name, Kind: kind, Enabled: true}
	var (
		input *jsonText
		state string
	)
	if kind == "Schedule" {
		var p scheduleEventProps
		if err := decodeStrict(props, &p); err != nil {
			return e, err
		}
		e.Expression, e.RuleName, e.Description = p.Schedule, p.Name, p.Description
		e.Enabled = p.Enabled.or(true)
		input, state = p.Input, p.State
	} else {
		var p scheduleV2EventProps
		if err := decodeStrict(props, &p); err != nil {
			return e, err
		}
		e.Expression, e.Timezone, e.RuleName, e.Description = p.ScheduleExpression, p.ScheduleExpressionTimezone, p.Name, p.Description
		input, state = p.Input, p.State
	}
	switch state {
	case "":
	case "ENABLED":
		e.Enabled = true
	case "DISABLED":
		e.Enabled = false
	default:
		return e, fmt.Errorf("State %q: expected ENABLED or DISABLED", state)
	}
	if input != nil {
		e.Input = string(*input)
	}
	if !strings.HasPrefix(e.Expression, "rate(") && !strings.HasPrefix(e.Expression, "cron(") &&
		!(kind == "ScheduleV2" && strings.HasPrefix(e.Expression, "at(")) {
		return e, fmt.Errorf("schedule expression %q: expected rate(...) or cron(...)", e.Expression)
	}
	return e, nil
}

type httpAPIEventProps struct {
	ApiId  string
	Path   string
	Method string
	Auth   *struct {
		Authorizer          string
		AuthorizationScopes []string
	}
	TimeoutInMillis      *intValue
	PayloadFormatVersion string
	RouteSettings        ignored
}

// httpAPIEvent decodes an HttpApi event. The API id and the authorizer as
// written are returned apart: the effective authorizer is known only once
// every API is (linkHTTPAPIEvents).
func httpAPIEvent(name string, props any) (e HTTPAPIEvent, apiID, authorizer string, err error) {
	var p httpAPIEventProps
	if err := decodeStrict(props, &p); err != nil {
		return e, "", "", err
	}
	e = HTTPAPIEvent{
		Name:                 name,
		Method:               strings.ToUpper(p.Method),
		Path:                 p.Path,
		Timeout:              time.Duration(p.TimeoutInMillis.or(30000)) * time.Millisecond,
		PayloadFormatVersion: p.PayloadFormatVersion,
	}
	// With neither Path nor Method SAM creates the catch-all route.
	if e.Path == "" && e.Method == "" {
		e.Path, e.Method = "$default", "ANY"
	}
	if e.Path == "" || e.Method == "" {
		return e, "", "", errors.New("Path and Method go together")
	}
	if e.Method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
		e.Method = "ANY"
	}
	if e.PayloadFormatVersion == "" {
		e.PayloadFormatVersion = "2.0"
	}
	if e.Timeout < 50*time.Millisecond || e.Timeout > 30*time.Second {
		return e, "", "", fmt.Errorf("TimeoutInMillis %d: expected 50 to 30000", e.Timeout.Milliseconds())
	}
	if p.Auth != nil {
		authorizer = p.Auth.Authorizer
		e.AuthorizationScopes = p.Auth.AuthorizationScopes
	}
	return e, p.ApiId, authorizer, nil
}
