package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
)

// Resource types this package supports.
const (
	typeTable        = "AWS::DynamoDB::Table"
	typeQueue        = "AWS::SQS::Queue"
	typeQueuePolicy  = "AWS::SQS::QueuePolicy"
	typeTopic        = "AWS::SNS::Topic"
	typeSubscription = "AWS::SNS::Subscription"
	typeBucket       = "AWS::S3::Bucket"
	typeFunction     = "AWS::Serverless::Function"
	typeHTTPAPI      = "AWS::Serverless::HttpApi"
	typeStateMachine = "AWS::Serverless::StateMachine"
	typeAlarm        = "AWS::CloudWatch::Alarm"
	typeSSMParameter = "AWS::SSM::Parameter"
	typeLogGroup     = "AWS::Logs::LogGroup"
	typeKMSKey       = "AWS::KMS::Key"

	typeUserPool       = "AWS::Cognito::UserPool"
	typeUserPoolClient = "AWS::Cognito::UserPoolClient"
	typeUserPoolGroup  = "AWS::Cognito::UserPoolGroup"
)

// resourceKind describes how one resource type is named, referenced and
// turned into the model.
type resourceKind struct {
	// nameProperty holds the explicit physical name; "" when the type has
	// none (the logical ID is then the name).
	nameProperty  string
	lowerCaseName bool
	// fifoProperty, when true, makes a generated name end in ".fifo".
	fifoProperty string
	refs         func(r *resolver, id string, res *rawResource, name string) (*resourceRefs, error)
	build        func(b *builder, in resourceInput) error
}

// resourceKinds is filled in init because its functions reach the resolver,
// which reads the map: a package-level initializer would be a cycle.
var resourceKinds map[string]resourceKind

func init() {
	resourceKinds = map[string]resourceKind{
		typeTable:        {nameProperty: "TableName", refs: tableRefs, build: buildTable},
		typeQueue:        {nameProperty: "QueueName", fifoProperty: "FifoQueue", refs: queueRefs, build: buildQueue},
		typeQueuePolicy:  {refs: nameRefs, build: buildQueuePolicy},
		typeTopic:        {nameProperty: "TopicName", fifoProperty: "FifoTopic", refs: topicRefs, build: buildTopic},
		typeSubscription: {refs: subscriptionRefs, build: buildSubscription},
		typeBucket:       {nameProperty: "BucketName", lowerCaseName: true, refs: bucketRefs, build: buildBucket},
		typeFunction:     {nameProperty: "FunctionName", refs: functionRefs, build: buildFunction},
		typeHTTPAPI:      {refs: httpAPIRefs, build: buildHTTPAPI},
		typeStateMachine: {nameProperty: "Name", refs: stateMachineRefs, build: buildStateMachine},
		typeAlarm:        {nameProperty: "AlarmName", refs: alarmRefs, build: buildAlarm},
		typeSSMParameter: {nameProperty: "Name", refs: ssmParameterRefs, build: buildSSMParameter},
		typeLogGroup:     {nameProperty: "LogGroupName", refs: logGroupRefs, build: buildLogGroup},
		typeKMSKey:       {refs: kmsKeyRefs, build: buildKMSKey},

		typeUserPool:       {refs: userPoolRefs, build: buildUserPool},
		typeUserPoolClient: {refs: userPoolClientRefs, build: buildUserPoolClient},
		typeUserPoolGroup:  {refs: userPoolGroupRefs, build: buildUserPoolGroup},

		typeRole:         {nameProperty: "RoleName", refs: roleRefs, build: buildRole},
		typeBucketPolicy: {refs: nameRefs, build: buildBucketPolicy},
		typeDashboard:    {nameProperty: "DashboardName", refs: nameRefs, build: buildDashboard},
	}
}

// ignored marks a property that is accepted and deliberately not reproduced
// (see the table in doc.go). Its value is not inspected.
type ignored = json.RawMessage

// hasProperty reports whether a raw property is set and does not resolve to
// AWS::NoValue.
func (r *resolver) hasProperty(res *rawResource, prop string) (bool, error) {
	raw, ok := res.Properties[prop]
	if !ok {
		return false, nil
	}
	v, err := r.eval(raw)
	if err != nil {
		return false, fmt.Errorf("property %q: %w", prop, err)
	}
	return v != nil && v != noValue, nil
}

func nameRefs(_ *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name}, nil
}

// --- DynamoDB ---

func tableRefs(r *resolver, _ string, res *rawResource, name string) (*resourceRefs, error) {
	arn := r.arn("dynamodb", "table/"+name)
	refs := &resourceRefs{ref: name, attrs: map[string]string{"Arn": arn}}
	// StreamArn exists only for a table with a stream, as on AWS: a
	// reference to a missing stream is a template bug worth failing on.
	stream, err := r.hasProperty(res, "StreamSpecification")
	if err != nil {
		return nil, err
	}
	if stream {
		refs.attrs["StreamArn"] = ddbstream.StreamARN(arn)
	}
	return refs, nil
}

type tableProps struct {
	TableName               string
	AttributeDefinitions    []AttributeDefinition
	KeySchema               []KeySchemaElement
	BillingMode             string
	ProvisionedThroughput   ignored
	OnDemandThroughput      ignored
	WarmThroughput          ignored
	GlobalSecondaryIndexes  []indexProps
	LocalSecondaryIndexes   []indexProps
	StreamSpecification     *struct{ StreamViewType string }
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       boolValue
	}
	PointInTimeRecoverySpecification ignored
	SSESpecification                 *struct {
		SSEEnabled     boolValue
		SSEType        string
		KMSMasterKeyId string
	}
	ContributorInsightsSpecification ignored
	DeletionProtectionEnabled        ignored
	TableClass                       ignored
	ResourcePolicy                   ignored
	Tags                             ignored
}

type indexProps struct {
	IndexName                        string
	KeySchema                        []KeySchemaElement
	Projection                       projectionProps
	ProvisionedThroughput            ignored
	OnDemandThroughput               ignored
	WarmThroughput                   ignored
	ContributorInsightsSpecification ignored
}

type projectionProps struct {
	ProjectionType   string
	NonKeyAttributes []string
}

var streamViewTypes = []string{"KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"}

func buildTable(b *builder, in resourceInput) error {
	var p tableProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if len(p.KeySchema) == 0 {
		return errors.New("KeySchema is required")
	}
	t := Table{
		Source:               in.id,
		Name:                 in.refs.ref,
		ARN:                  in.refs.attrs["Arn"],
		AttributeDefinitions: p.AttributeDefinitions,
		KeySchema:            p.KeySchema,
		BillingMode:          p.BillingMode,
	}
	if sse := p.SSESpecification; sse != nil {
		t.SSEEnabled, t.SSEKMSKeyID = bool(sse.SSEEnabled), sse.KMSMasterKeyId
	}
	for _, ix := range p.GlobalSecondaryIndexes {
		t.GlobalSecondaryIndexes = append(t.GlobalSecondaryIndexes, ix.model())
	}
	for _, ix := range p.LocalSecondaryIndexes {
		t.LocalSecondaryIndexes = append(t.LocalSecondaryIndexes, ix.model())
	}
	if s := p.StreamSpecification; s != nil {
		if !slices.Contains(streamViewTypes, s.StreamViewType) {
			return fmt.Errorf("StreamSpecification.StreamViewType %q: expected one of %s", s.StreamViewType, strings.Join(streamViewTypes, ", "))
		}
		t.StreamViewType = s.StreamViewType
		t.StreamARN = in.refs.attrs["StreamArn"]
	}
	if ttl := p.TimeToLiveSpecification; ttl != nil && bool(ttl.Enabled) {
		if ttl.AttributeName == "" {
			return errors.New("TimeToLiveSpecification.AttributeName is required when TTL is enabled")
		}
		t.TTLAttribute = ttl.AttributeName
	}
	b.stack.Tables = append(b.stack.Tables, t)
	return nil
}

func (p indexProps) model() SecondaryIndex {
	return SecondaryIndex{
		IndexName:        p.IndexName,
		KeySchema:        p.KeySchema,
		ProjectionType:   p.Projection.ProjectionType,
		NonKeyAttributes: p.Projection.NonKeyAttributes,
	}
}

// --- SQS ---

func queueRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	url := fmt.Sprintf("%s/%s/%s", r.opts.Endpoint, r.opts.AccountID, name)
	return &resourceRefs{ref: url, attrs: map[string]string{
		"Arn":       r.arn("sqs", name),
		"QueueName": name,
		"QueueUrl":  url,
	}}, nil
}

type queueProps struct {
	QueueName                     string
	VisibilityTimeout             *intValue
	MessageRetentionPeriod        *intValue
	DelaySeconds                  *intValue
	ReceiveMessageWaitTimeSeconds *intValue
	MaximumMessageSize            *intValue
	RedrivePolicy                 *jsonText
	FifoQueue                     boolValue
	ContentBasedDeduplication     boolValue
	DeduplicationScope            ignored
	FifoThroughputLimit           ignored
	RedriveAllowPolicy            ignored
	SqsManagedSseEnabled          boolValue
	KmsMasterKeyId                string
	KmsDataKeyReusePeriodSeconds  ignored
	Tags                          ignored
}

// redriveProps is the RedrivePolicy document; SQS spells its keys in
// lower camel case.
type redriveProps struct {
	DeadLetterTargetArn string   `json:"deadLetterTargetArn"`
	MaxReceiveCount     intValue `json:"maxReceiveCount"`
}

func buildQueue(b *builder, in resourceInput) error {
	var p queueProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	q := Queue{
		Source:                    in.id,
		Name:                      in.refs.attrs["QueueName"],
		URL:                       in.refs.ref,
		ARN:                       in.refs.attrs["Arn"],
		VisibilityTimeout:         seconds(p.VisibilityTimeout.or(30)),
		MessageRetentionPeriod:    seconds(p.MessageRetentionPeriod.or(345600)),
		Delay:                     seconds(p.DelaySeconds.or(0)),
		ReceiveMessageWaitTime:    seconds(p.ReceiveMessageWaitTimeSeconds.or(0)),
		MaximumMessageSize:        p.MaximumMessageSize.or(0),
		FIFO:                      bool(p.FifoQueue),
		ContentBasedDeduplication: bool(p.ContentBasedDeduplication),
		SQSManagedSSE:             bool(p.SqsManagedSseEnabled),
		KMSMasterKeyID:            p.KmsMasterKeyId,
	}
	if q.FIFO != strings.HasSuffix(q.Name, ".fifo") {
		return fmt.Errorf("queue name %q: a FIFO queue's name, and only its, ends in .fifo", q.Name)
	}
	if p.RedrivePolicy != nil {
		var rp redriveProps
		if err := decodeStrict(json.RawMessage(*p.RedrivePolicy), &rp); err != nil {
			return fmt.Errorf("RedrivePolicy: %w", err)
		}
		if rp.DeadLetterTargetArn == "" || rp.MaxReceiveCount < 1 {
			return errors.New("RedrivePolicy: deadLetterTargetArn and a maxReceiveCount of at least 1 are required")
		}
		q.RedrivePolicy = &RedrivePolicy{DeadLetterTargetARN: rp.DeadLetterTargetArn, MaxReceiveCount: int(rp.MaxReceiveCount)}
	}
	b.stack.Queues = append(b.stack.Queues, q)
	return nil
}

func buildQueuePolicy(b *builder, in resourceInput) error {
	var p struct {
		Queues         []string
		PolicyDocument json.RawMessage
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	b.stack.QueuePolicies = append(b.stack.QueuePolicies, QueuePolicy{
		Source:         in.id,
		QueueURLs:      p.Queues,
		PolicyDocument: p.PolicyDocument,
	})
	return nil
}

// --- SNS ---

func topicRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	arn := r.arn("sns", name)
	return &resourceRefs{ref: arn, attrs: map[string]string{"TopicArn": arn, "TopicName": name}}, nil
}

type topicProps struct {
	TopicName    string
	Subscription []struct {
		Protocol string
		Endpoint string
	}
	FifoTopic                 boolValue
	ContentBasedDeduplication boolValue
	DisplayName               ignored
	KmsMasterKeyId            string
	SignatureVersion          ignored
	TracingConfig             ignored
	ArchivePolicy             ignored
	DataProtectionPolicy      ignored
	DeliveryStatusLogging     ignored
	Tags                      ignored
}

func buildTopic(b *builder, in resourceInput) error {
	var p topicProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	t := Topic{
		Source:                    in.id,
		Name:                      in.refs.attrs["TopicName"],
		ARN:                       in.refs.ref,
		FIFO:                      bool(p.FifoTopic),
		ContentBasedDeduplication: bool(p.ContentBasedDeduplication),
		KMSMasterKeyID:            p.KmsMasterKeyId,
	}
	b.stack.Topics = append(b.stack.Topics, t)
	for i, s := range p.Subscription {
		if s.Protocol == "" || s.Endpoint == "" {
			return fmt.Errorf("Subscription[%d]: Protocol and Endpoint are required", i)
		}
		b.stack.Subscriptions = append(b.stack.Subscriptions, Subscription{
			Source:   fmt.Sprintf("%s.Subscription[%d]", in.id, i),
			TopicARN: t.ARN,
			Protocol: s.Protocol,
			Endpoint: s.Endpoint,
		})
	}
	return nil
}

func subscriptionRefs(r *resolver, id string, res *rawResource, _ string) (*resourceRefs, error) {
	// A real subscription ARN ends in a random id; the logical ID keeps it
	// deterministic.
	topic, err := r.eval(res.Properties["TopicArn"])
	if err != nil {
		return nil, fmt.Errorf("property \"TopicArn\": %w", err)
	}
	s, _ := topic.(string)
	return &resourceRefs{ref: s + ":" + id}, nil
}

type subscriptionProps struct {
	TopicArn            string
	Protocol            string
	Endpoint            string
	RawMessageDelivery  boolValue
	FilterPolicy        *jsonText
	FilterPolicyScope   string
	RedrivePolicy       *jsonText
	DeliveryPolicy      ignored
	ReplayPolicy        ignored
	Region              ignored
	SubscriptionRoleArn ignored
}

func buildSubscription(b *builder, in resourceInput) error {
	var p subscriptionProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if p.TopicArn == "" || p.Protocol == "" || p.Endpoint == "" {
		return errors.New("TopicArn, Protocol and Endpoint are required")
	}
	switch p.FilterPolicyScope {
	case "", "MessageAttributes", "MessageBody":
	default:
		return fmt.Errorf("FilterPolicyScope %q: expected MessageAttributes or MessageBody", p.FilterPolicyScope)
	}
	s := Subscription{
		Source:             in.id,
		TopicARN:           p.TopicArn,
		Protocol:           p.Protocol,
		Endpoint:           p.Endpoint,
		RawMessageDelivery: bool(p.RawMessageDelivery),
		FilterPolicyScope:  p.FilterPolicyScope,
	}
	if p.FilterPolicy != nil {
		s.FilterPolicy = string(*p.FilterPolicy)
	}
	if p.RedrivePolicy != nil {
		s.RedrivePolicy = string(*p.RedrivePolicy)
	}
	b.stack.Subscriptions = append(b.stack.Subscriptions, s)
	return nil
}

// --- S3 ---

func bucketRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name, attrs: map[string]string{
		"Arn":                "arn:aws:s3:::" + name,
		"DomainName":         name + ".s3.amazonaws.com",
		"RegionalDomainName": fmt.Sprintf("%s.s3.%s.amazonaws.com", name, r.opts.Region),
	}}, nil
}

type bucketProps struct {
	BucketName                       string
	LifecycleConfiguration           ignored
	BucketEncryption                 *bucketEncryption
	PublicAccessBlockConfiguration   *publicAccessBlock
	VersioningConfiguration          ignored
	OwnershipControls                ignored
	CorsConfiguration                ignored
	LoggingConfiguration             ignored
	IntelligentTieringConfigurations ignored
	MetricsConfigurations            ignored
	AccessControl                    ignored
	Tags                             ignored
}

func buildBucket(b *builder, in resourceInput) error {
	var p bucketProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	bk := Bucket{Source: in.id, Name: in.refs.ref, ARN: in.refs.attrs["Arn"]}
	if e := p.BucketEncryption; e != nil && len(e.ServerSideEncryptionConfiguration) > 0 {
		bk.SSEAlgorithm = e.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm
	}
	if a := p.PublicAccessBlockConfiguration; a != nil {
		bk.PublicAccessBlocked = bool(a.BlockPublicAcls && a.BlockPublicPolicy && a.IgnorePublicAcls && a.RestrictPublicBuckets)
	}
	b.stack.Buckets = append(b.stack.Buckets, bk)
	return nil
}

type bucketEncryption struct {
	ServerSideEncryptionConfiguration []struct {
		ServerSideEncryptionByDefault struct {
			SSEAlgorithm   string
			KMSMasterKeyID string
		}
		BucketKeyEnabled boolValue
	}
}

type publicAccessBlock struct {
	BlockPublicAcls       boolValue
	BlockPublicPolicy     boolValue
	IgnorePublicAcls      boolValue
	RestrictPublicBuckets boolValue
}

// --- CloudWatch, SSM, Logs ---

func alarmRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name, attrs: map[string]string{"Arn": r.arn("cloudwatch", "alarm:"+name)}}, nil
}

type alarmProps struct {
	AlarmName                        string
	AlarmDescription                 string
	Namespace                        string
	MetricName                       string
	Dimensions                       []Dimension
	Statistic                        string
	ExtendedStatistic                string
	Period                           *intValue
	EvaluationPeriods                intValue
	DatapointsToAlarm                *intValue
	Threshold                        *floatValue
	ThresholdMetricId                string
	ComparisonOperator               string
	TreatMissingData                 string
	Unit                             string
	ActionsEnabled                   *boolValue
	AlarmActions                     []string
	OKActions                        []string
	InsufficientDataActions          []string
	Metrics                          json.RawMessage
	EvaluateLowSampleCountPercentile ignored
	Tags                             ignored
}

func buildAlarm(b *builder, in resourceInput) error {
	var p alarmProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if p.ComparisonOperator == "" || p.EvaluationPeriods < 1 {
		return errors.New("ComparisonOperator and EvaluationPeriods are required")
	}
	a := Alarm{
		Source:                  in.id,
		Name:                    in.refs.ref,
		ARN:                     in.refs.attrs["Arn"],
		Description:             p.AlarmDescription,
		Namespace:               p.Namespace,
		MetricName:              p.MetricName,
		Dimensions:              p.Dimensions,
		Statistic:               p.Statistic,
		ExtendedStatistic:       p.ExtendedStatistic,
		Period:                  seconds(p.Period.or(0)),
		EvaluationPeriods:       int(p.EvaluationPeriods),
		DatapointsToAlarm:       p.DatapointsToAlarm.or(0),
		ComparisonOperator:      p.ComparisonOperator,
		TreatMissingData:        p.TreatMissingData,
		Unit:                    p.Unit,
		ActionsEnabled:          p.ActionsEnabled.or(true),
		AlarmActions:            p.AlarmActions,
		OKActions:               p.OKActions,
		InsufficientDataActions: p.InsufficientDataActions,
		Metrics:                 p.Metrics,
	}
	if p.Threshold != nil {
		a.Threshold = float64(*p.Threshold)
	}
	b.stack.Alarms = append(b.stack.Alarms, a)
	return nil
}

func ssmParameterRefs(r *resolver, _ string, res *rawResource, name string) (*resourceRefs, error) {
	refs := &resourceRefs{ref: name, attrs: map[string]string{}}
	for _, attr := range []string{"Type", "Value"} {
		v, err := r.eval(res.Properties[attr])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", attr, err)
		}
		if v != nil {
			if s, err := scalarString(v); err == nil {
				refs.attrs[attr] = s
			}
		}
	}
	return refs, nil
}

type ssmParameterProps struct {
	Name           string
	Type           string
	Value          stringValue
	Description    string
	AllowedPattern ignored
	DataType       ignored
	Policies       ignored
	Tier           ignored
	Tags           ignored
}

func buildSSMParameter(b *builder, in resourceInput) error {
	var p ssmParameterProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	switch p.Type {
	case "String", "StringList":
	default:
		// SecureString cannot be created by CloudFormation either.
		return fmt.Errorf("Type %q: expected String or StringList", p.Type)
	}
	b.stack.SSMParameters = append(b.stack.SSMParameters, SSMParameter{
		Source:      in.id,
		Name:        in.refs.ref,
		Type:        p.Type,
		Value:       string(p.Value),
		Description: p.Description,
	})
	return nil
}

func logGroupRefs(r *resolver, _ string, _ *rawResource, name string) (*resourceRefs, error) {
	return &resourceRefs{ref: name, attrs: map[string]string{"Arn": r.arn("logs", "log-group:"+name+":*")}}, nil
}

func buildLogGroup(b *builder, in resourceInput) error {
	var p struct {
		LogGroupName         string
		RetentionInDays      *intValue
		KmsKeyId             ignored
		LogGroupClass        ignored
		DataProtectionPolicy ignored
		Tags                 ignored
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	b.stack.LogGroups = append(b.stack.LogGroups, LogGroup{
		Source:          in.id,
		Name:            in.refs.ref,
		ARN:             in.refs.attrs["Arn"],
		RetentionInDays: p.RetentionInDays.or(0),
	})
	return nil
}

// kmsKeyRefs: a key's Ref is its key id (here the logical id, as no key is
// created), its Arn the key's ARN.
func kmsKeyRefs(r *resolver, id string, _ *rawResource, _ string) (*resourceRefs, error) {
	return &resourceRefs{ref: id, attrs: map[string]string{"Arn": r.arn("kms", "key/"+id), "KeyId": id}}, nil
}

// buildKMSKey keeps nothing: the emulated services do not encrypt, so a
// key only has to resolve where a resource names it (KmsMasterKeyId).
func buildKMSKey(_ *builder, in resourceInput) error {
	var p struct {
		Description         string
		KeyPolicy           ignored
		EnableKeyRotation   ignored
		KeySpec             ignored
		KeyUsage            ignored
		MultiRegion         ignored
		PendingWindowInDays ignored
		Enabled             ignored
		Origin              ignored
		Tags                ignored
	}
	return decodeStrict(in.props, &p)
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
