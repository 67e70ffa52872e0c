package template

import (
	"encoding/json"
	"time"
)

// Stack is a parsed template: every supported resource with its physical
// name, ARNs and properties resolved. Each slice is sorted by Source (the
// logical ID), so two parses of one template compare equal.
type Stack struct {
	Name      string // stack name (AWS::StackName)
	Region    string
	AccountID string
	Dir       string // absolute directory relative paths were resolved against

	// Parameters holds the value of every template parameter after
	// Options.Parameters overrides; list parameters are comma-joined.
	Parameters map[string]string
	// NoEchoParameters marks the parameters declared NoEcho (secrets).
	NoEchoParameters map[string]bool
	// Outputs holds every output whose condition holds, resolved to text.
	Outputs map[string]string

	Tables        []Table
	Queues        []Queue
	QueuePolicies []QueuePolicy
	Topics        []Topic
	Subscriptions []Subscription // AWS::SNS::Subscription and Topic.Subscription entries
	Buckets       []Bucket
	Functions     []Function
	HTTPAPIs      []HTTPAPI // explicit AWS::Serverless::HttpApi and the implicit ServerlessHttpApi
	StateMachines []StateMachine
	Alarms        []Alarm
	SSMParameters []SSMParameter
	LogGroups     []LogGroup
	// IAM roles, bucket policies and dashboards are kept as data.
	Roles          []Role
	BucketPolicies []BucketPolicy
	Dashboards     []Dashboard

	// Cognito resources are kept as data: the local cloud's issuer stands
	// in for a user pool.
	UserPools       []UserPool
	UserPoolClients []UserPoolClient
	UserPoolGroups  []UserPoolGroup
}

// Table is an AWS::DynamoDB::Table.
type Table struct {
	Source                 string
	Name                   string
	ARN                    string
	AttributeDefinitions   []AttributeDefinition
	KeySchema              []KeySchemaElement
	BillingMode            string // as written; the local cloud always bills per request
	GlobalSecondaryIndexes []SecondaryIndex
	LocalSecondaryIndexes  []SecondaryIndex
	// StreamViewType is "" when the table has no stream.
	StreamViewType string
	// StreamARN is ddbstream.StreamARN(ARN), or "" when the table has no stream.
	StreamARN string
	// TTLAttribute is the time-to-live attribute, or "" when TTL is off.
	TTLAttribute string
	// SSEEnabled is SSESpecification.SSEEnabled: encryption at rest with a
	// KMS key (SSEKMSKeyID, or the AWS managed key when ""), kept as data.
	// DynamoDB encrypts every table with an AWS owned key otherwise.
	SSEEnabled  bool
	SSEKMSKeyID string
}

// AttributeDefinition declares the type (S, N or B) of a key attribute.
type AttributeDefinition struct {
	AttributeName string
	AttributeType string
}

// KeySchemaElement is one key attribute with its role (HASH or RANGE).
type KeySchemaElement struct {
	AttributeName string
	KeyType       string
}

// SecondaryIndex is a global or local secondary index.
type SecondaryIndex struct {
	IndexName        string
	KeySchema        []KeySchemaElement
	ProjectionType   string // ALL, KEYS_ONLY or INCLUDE
	NonKeyAttributes []string
}

// Queue is an AWS::SQS::Queue. Durations carry the SQS defaults when the
// template leaves them out.
type Queue struct {
	Source                    string
	Name                      string
	URL                       string
	ARN                       string
	VisibilityTimeout         time.Duration // default 30s
	MessageRetentionPeriod    time.Duration // default 4 days
	Delay                     time.Duration // DelaySeconds, default 0
	ReceiveMessageWaitTime    time.Duration // ReceiveMessageWaitTimeSeconds, default 0
	MaximumMessageSize        int           // bytes, 0 when not set (SQS default)
	FIFO                      bool
	ContentBasedDeduplication bool
	// RedrivePolicy is nil when the queue has no dead-letter queue.
	RedrivePolicy *RedrivePolicy
	// SQSManagedSSE (SqsManagedSseEnabled) and KMSMasterKeyID (KmsMasterKeyId)
	// say how the queue is encrypted at rest; kept as data.
	SQSManagedSSE  bool
	KMSMasterKeyID string
}

// RedrivePolicy sends a message to a dead-letter queue after MaxReceiveCount
// receives.
type RedrivePolicy struct {
	DeadLetterTargetARN string
	MaxReceiveCount     int
}

// QueuePolicy is an AWS::SQS::QueuePolicy, kept as data: the local cloud does
// not enforce IAM.
type QueuePolicy struct {
	Source         string
	QueueURLs      []string
	PolicyDocument json.RawMessage
}

// Topic is an AWS::SNS::Topic. Its inline Subscription entries are listed in
// Stack.Subscriptions.
type Topic struct {
	Source                    string
	Name                      string
	ARN                       string
	FIFO                      bool
	ContentBasedDeduplication bool
	// KMSMasterKeyID is the key that encrypts messages at rest, "" for none;
	// kept as data.
	KMSMasterKeyID string
}

// Subscription is an AWS::SNS::Subscription or one entry of a topic's
// Subscription list (then Source is "<TopicLogicalId>.Subscription[<i>]").
type Subscription struct {
	Source             string
	TopicARN           string
	Protocol           string
	Endpoint           string
	RawMessageDelivery bool
	FilterPolicy       string // JSON text, "" for none
	FilterPolicyScope  string // MessageAttributes (default) or MessageBody
	RedrivePolicy      string // JSON text, "" for none
}

// Bucket is an AWS::S3::Bucket.
type Bucket struct {
	Source string
	Name   string
	ARN    string
	// SSEAlgorithm is the default encryption of BucketEncryption's first
	// rule ("AES256", "aws:kms", …), empty when the template sets none. It
	// is kept for checks of the template (package securitytest): the local
	// cloud does not encrypt.
	SSEAlgorithm string
	// PublicAccessBlocked is true when PublicAccessBlockConfiguration turns
	// all four settings on. Kept for checks too; the local cloud has no
	// public access.
	PublicAccessBlocked bool
}

// Function is an AWS::Serverless::Function with Globals.Function merged in
// and its event sources typed.
type Function struct {
	Source      string
	Name        string
	ARN         string
	Description string
	// CodeDir is the absolute directory CodeUri names.
	CodeDir       string
	Handler       string
	Runtime       string
	Architectures []string      // default [x86_64]
	MemorySize    int           // MB, default 128
	Timeout       time.Duration // default 3s
	// Environment is Environment.Variables (Globals merged key by key).
	Environment map[string]string
	// ReservedConcurrency is nil when the function has no reserved
	// concurrency (it may then scale to the account limit).
	ReservedConcurrency *int
	Tracing             string
	Role                string // explicit Role, "" when SAM would generate one
	// Policies is the Policies property as written after intrinsics were
	// resolved: a policy name, a list of SAM policy templates, managed policy
	// names and statements, or a policy document. Nothing enforces it locally.
	Policies json.RawMessage
	// BuildMethod is Metadata.BuildMethod (e.g. go1.x, makefile).
	BuildMethod string

	SQSEvents      []SQSEvent
	DynamoDBEvents []DynamoDBEvent
	Schedules      []ScheduleEvent
	HTTPAPIEvents  []HTTPAPIEvent
}

// FilterCriteria filters the records an event source mapping delivers.
type FilterCriteria struct {
	// Patterns are the filter patterns as JSON text, in template order.
	Patterns []string
}

// SQSEvent is an event of type SQS: an event source mapping from a queue.
// Defaults are those of AWS.
type SQSEvent struct {
	Name                    string // key under Events
	QueueARN                string
	BatchSize               int           // default 10
	MaximumBatchingWindow   time.Duration // default 0
	ReportBatchItemFailures bool          // FunctionResponseTypes has ReportBatchItemFailures
	MaximumConcurrency      int           // ScalingConfig.MaximumConcurrency, 0 when unset
	Enabled                 bool          // default true
	FilterCriteria          *FilterCriteria
}

// DynamoDBEvent is an event of type DynamoDB: an event source mapping from a
// table's stream. Defaults are those of AWS.
type DynamoDBEvent struct {
	Name                       string // key under Events
	StreamARN                  string
	StartingPosition           string        // TRIM_HORIZON or LATEST
	BatchSize                  int           // default 100
	MaximumBatchingWindow      time.Duration // default 0
	FilterCriteria             *FilterCriteria
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts is -1 (the default) to retry until the record
	// expires.
	MaximumRetryAttempts int
	// MaximumRecordAge is 0 (the default, -1 in the template) for no limit.
	MaximumRecordAge        time.Duration
	OnFailureDestination    string // DestinationConfig.OnFailure.Destination ARN, "" for none
	OnFailureType           string // DestinationConfig.OnFailure.Type (SQS or SNS), as written
	ReportBatchItemFailures bool
	ParallelizationFactor   int  // default 1
	Enabled                 bool // default true
}

// ScheduleEvent is an event of type Schedule (an EventBridge rule) or
// ScheduleV2 (an EventBridge Scheduler schedule).
type ScheduleEvent struct {
	Name        string // key under Events
	Kind        string // Schedule or ScheduleV2
	Expression  string // rate(...), cron(...) or at(...)
	Timezone    string // ScheduleExpressionTimezone (ScheduleV2), "" for UTC
	Input       string // JSON text delivered as the event, "" for the default event
	Enabled     bool   // default true
	RuleName    string // Name property, "" when not set
	Description string
}

// HTTPAPIEvent is an event of type HttpApi: a route of an HTTP API.
type HTTPAPIEvent struct {
	Name string // key under Events
	// APISource is the logical ID of the HTTP API (ServerlessHttpApi when the
	// event names none) and APIID its id.
	APISource string
	APIID     string
	Method    string // upper case, ANY for any method
	Path      string // e.g. /classes/{class_id}; $default for the catch-all route
	// Authorizer is the effective authorizer: the event's Auth.Authorizer,
	// else the API's DefaultAuthorizer; "" when the route is open (NONE).
	Authorizer           string
	AuthorizationScopes  []string
	Timeout              time.Duration // TimeoutInMillis, default 30s
	PayloadFormatVersion string        // default 2.0
}

// HTTPAPI is an AWS::Serverless::HttpApi, with Globals.HttpApi merged in.
type HTTPAPI struct {
	Source            string
	ID                string // the Ref value: the logical ID in lower case
	Endpoint          string // the ApiEndpoint attribute
	StageName         string // default $default
	Authorizers       map[string]JWTAuthorizer
	DefaultAuthorizer string
	CORS              *CORS
}

// JWTAuthorizer validates a bearer JWT as API Gateway does.
type JWTAuthorizer struct {
	Issuer         string
	Audience       []string
	IdentitySource string // default $request.header.Authorization
}

// CORS is an HTTP API's CorsConfiguration.
type CORS struct {
	AllowOrigins     []string
	AllowHeaders     []string
	AllowMethods     []string
	ExposeHeaders    []string
	AllowCredentials bool
	MaxAge           time.Duration
}

// StateMachine is an AWS::Serverless::StateMachine. The local cloud's
// executor runs it; nothing is created in the emulator.
type StateMachine struct {
	Source string
	Name   string
	ARN    string
	Type   string // STANDARD (default) or EXPRESS
	// Definition is the ASL document as compact JSON, with every
	// DefinitionSubstitutions placeholder replaced.
	Definition json.RawMessage
	// DefinitionPath is the absolute path DefinitionUri names, "" for an
	// inline Definition.
	DefinitionPath string
	// Substitutions holds the resolved DefinitionSubstitutions.
	Substitutions map[string]string
	Role          string
	Policies      json.RawMessage // as for Function.Policies
	Schedules     []ScheduleEvent
}

// Alarm is an AWS::CloudWatch::Alarm, kept as data: the emulator never
// evaluates alarms, so the local cloud reports on them itself.
type Alarm struct {
	Source                  string
	Name                    string
	ARN                     string
	Description             string
	Namespace               string
	MetricName              string
	Dimensions              []Dimension
	Statistic               string
	ExtendedStatistic       string
	Period                  time.Duration
	EvaluationPeriods       int
	DatapointsToAlarm       int // 0 when not set (then equal to EvaluationPeriods)
	Threshold               float64
	ComparisonOperator      string
	TreatMissingData        string
	Unit                    string
	ActionsEnabled          bool // default true
	AlarmActions            []string
	OKActions               []string
	InsufficientDataActions []string
	// Metrics is a metric-math alarm's Metrics list as JSON, nil otherwise.
	Metrics json.RawMessage
}

// Dimension narrows an alarm's metric.
type Dimension struct {
	Name  string
	Value string
}

// SSMParameter is an AWS::SSM::Parameter.
type SSMParameter struct {
	Source      string
	Name        string
	Type        string // String or StringList
	Value       string
	Description string
}

// LogGroup is an AWS::Logs::LogGroup, kept as data.
type LogGroup struct {
	Source          string
	Name            string
	ARN             string
	RetentionInDays int // 0 for never expire
}

// UserPool is an AWS::Cognito::UserPool, kept as data.
type UserPool struct {
	Source string
	Name   string // UserPoolName, default <StackName>-<LogicalId>
	ID     string // the Ref value, "<region>_<LogicalId>"
	ARN    string
	// ProviderURL is the issuer of the pool's tokens,
	// https://cognito-idp.<region>.amazonaws.com/<ID>.
	ProviderURL            string
	UsernameAttributes     []string
	AutoVerifiedAttributes []string
	// VerifyBeforeUpdate is UserAttributeUpdateSettings.
	// AttributesRequireVerificationBeforeUpdate: a changed attribute keeps its
	// old value until the new one is verified.
	VerifyBeforeUpdate    []string
	AdminCreateUserOnly   bool // AdminCreateUserConfig.AllowAdminCreateUserOnly
	MinimumPasswordLength int  // 0 when not set (Cognito's default is 8)
	MFAConfiguration      string
	DeletionProtection    string
}

// UserPoolClient is an AWS::Cognito::UserPoolClient, kept as data. Token
// validities carry Cognito's defaults when the template leaves them out.
type UserPoolClient struct {
	Source                     string
	ClientID                   string // the Ref value: the logical ID in lower case
	UserPoolID                 string
	GenerateSecret             bool
	ExplicitAuthFlows          []string
	PreventUserExistenceErrors string
	EnableTokenRevocation      bool // default true
	AccessTokenValidity        time.Duration
	IDTokenValidity            time.Duration
	RefreshTokenValidity       time.Duration
	ReadAttributes             []string
	WriteAttributes            []string
	AllowedOAuthFlows          []string
}

// UserPoolGroup is an AWS::Cognito::UserPoolGroup, kept as data. Its name
// is what a member's cognito:groups claim lists.
type UserPoolGroup struct {
	Source      string
	Name        string // GroupName, default the logical ID
	UserPoolID  string
	Description string
	Precedence  *int
	RoleARN     string
}

// Function returns the function with the given logical ID.
func (s *Stack) Function(source string) (*Function, bool) {
	for i := range s.Functions {
		if s.Functions[i].Source == source {
			return &s.Functions[i], true
		}
	}
	return nil, false
}

// QueueByARN returns the queue with the given ARN, as event sources and
// redrive policies name queues.
func (s *Stack) QueueByARN(arn string) (*Queue, bool) {
	for i := range s.Queues {
		if s.Queues[i].ARN == arn {
			return &s.Queues[i], true
		}
	}
	return nil, false
}

// TableByStreamARN returns the table whose stream has the given ARN.
func (s *Stack) TableByStreamARN(arn string) (*Table, bool) {
	for i := range s.Tables {
		if s.Tables[i].StreamARN != "" && s.Tables[i].StreamARN == arn {
			return &s.Tables[i], true
		}
	}
	return nil, false
}
