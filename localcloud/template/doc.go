// Package template reads the SAM template (infra/template.yaml), the single
// source of truth for the stack's resources, into a typed model the local
// cloud consumes directly: tables, queues, topics, subscriptions, buckets,
// functions with their typed event sources, HTTP APIs, state machines with
// their substituted definitions, alarms, SSM parameters, log groups,
// Cognito user pools, app clients and groups, IAM roles, bucket policies,
// dashboards, parameters and outputs.
//
// # Parsing
//
// Short-form tags (!Ref, !GetAtt, !Sub, ...) are expanded by goformation's
// intrinsics package, whose handlers are all replaced by this package's own:
// Ref, Fn::GetAtt, Fn::Sub (with ${!Literal}), Fn::Join, Fn::Select,
// Fn::Split, Fn::Base64, Fn::FindInMap, Fn::GetAZs, and the condition
// functions Fn::If, Fn::Equals, Fn::Not, Fn::And, Fn::Or with the Conditions
// section and resource- and output-level Condition. Ref AWS::NoValue removes
// the property or list element. Fn::ImportValue, Fn::Cidr and Fn::Transform
// are errors. Each resource's Properties are then decoded into this
// package's own structs with unknown fields rejected; goformation's typed
// SAM structs are not used because they silently drop properties the system
// relies on (FunctionResponseTypes, ScalingConfig, FilterCriteria).
//
// # Contracts
//
//   - Deterministic: physical names, ARNs, queue URLs and API ids are
//     computed from the template and Options alone, before anything exists,
//     so every Ref and Fn::GetAtt resolves in one pass whatever the
//     declaration order. A name is the explicit name property (TableName,
//     QueueName, TopicName, BucketName, FunctionName, Name, AlarmName,
//     LogGroupName) or <StackName>-<LogicalId> (lower case for buckets, with
//     ".fifo" for FIFO queues and topics). An HTTP API's id is its logical ID
//     in lower case. A table's StreamArn is ddbstream.StreamARN of its ARN and
//     exists only when the table has a StreamSpecification. Every slice of
//     the Stack is sorted by logical ID, so parsing twice gives equal values.
//   - Strict: an unsupported resource type, template section, Globals
//     section, event type, intrinsic function or property is an error naming
//     the resource, its type and the property, e.g.
//     `resource NotificationsQueue (AWS::SQS::Queue): unsupported property "Foo"`.
//     Parse stops at the first error. Values AWS would reject at deploy time
//     and that the local cloud depends on (stream view types, starting
//     positions, batch sizes, response types, placeholders without a
//     DefinitionSubstitutions entry) are errors too, and so is a Number
//     parameter that is not a number or lies outside its MinValue..MaxValue.
//   - Lenient where CloudFormation is: integers and booleans may be written
//     as strings ("30", "true"), strings as numbers (environment variables),
//     and JSON-valued properties (RedrivePolicy, FilterPolicy, filter
//     patterns, schedule Input) as text or as a YAML map.
//   - SAM Globals: Globals.Function and Globals.HttpApi are merged into each
//     function and HTTP API with SAM's rules: maps merge key by key (so
//     Environment.Variables combine, the function's value winning), lists
//     append the resource's entries to the global ones, scalars are replaced.
//   - An HttpApi event without ApiId creates the implicit ServerlessHttpApi,
//     which templates may reference. An event's Authorizer is resolved to
//     the effective one (its own, else the API's DefaultAuthorizer; NONE
//     means open).
//   - Concurrency: Parse and Load may be called from several goroutines; a
//     returned Stack is plain data and is not modified afterwards.
//   - Known gap: both branches of Fn::If are resolved, so a reference that
//     is only valid in the untaken branch is still reported.
//
// # Accepted but not reproduced
//
// These properties are accepted so the same template deploys to AWS, and are
// deliberately ignored (not inspected) or kept as data only. The rule: a
// property may be ignored only when its absence does not change what the
// system observes locally; a property that would change behaviour the local
// cloud does not reproduce (S3 NotificationConfiguration, Kinesis streams,
// tumbling windows, Lambda authorizers, OpenAPI definitions) is rejected.
//
//	Resource type                  Property                                   Local cloud
//	-----------------------------  -----------------------------------------  -----------------------------------------------
//	(every resource)               Metadata (except BuildMethod), DependsOn,  ignored (ordering is by reference)
//	                               DeletionPolicy, UpdateReplacePolicy,
//	                               UpdatePolicy, CreationPolicy
//	(every resource)               Tags, PropagateTags                        ignored
//	AWS::DynamoDB::Table           BillingMode                                kept; tables always bill per request
//	                               ProvisionedThroughput,                     ignored (no capacity limits locally)
//	                               OnDemandThroughput, WarmThroughput
//	                               (also on indexes)
//	                               SSESpecification                           kept as data (no encryption locally)
//	                               PointInTimeRecoverySpecification,          ignored
//	                               DeletionProtectionEnabled,
//	                               TableClass, ContributorInsightsSpecification,
//	                               ResourcePolicy
//	AWS::SQS::Queue                SqsManagedSseEnabled, KmsMasterKeyId       kept as data (no encryption locally)
//	                               KmsDataKeyReusePeriodSeconds               ignored
//	                               RedriveAllowPolicy, DeduplicationScope,    ignored (the emulator does not implement them)
//	                               FifoThroughputLimit
//	AWS::SQS::QueuePolicy          PolicyDocument                             kept as data, not enforced (no IAM locally)
//	AWS::SNS::Topic                KmsMasterKeyId                             kept as data (no encryption locally)
//	                               DisplayName,                               ignored
//	                               SignatureVersion, TracingConfig,
//	                               ArchivePolicy, DataProtectionPolicy,
//	                               DeliveryStatusLogging
//	AWS::SNS::Subscription         DeliveryPolicy, ReplayPolicy, Region,      ignored
//	                               SubscriptionRoleArn
//	AWS::S3::Bucket                BucketEncryption (first rule's algorithm),  kept as data (no encryption or public
//	                               PublicAccessBlockConfiguration             access locally)
//	                               LifecycleConfiguration,                    ignored (objects never expire locally)
//	                               VersioningConfiguration, OwnershipControls,
//	                               CorsConfiguration, LoggingConfiguration,
//	                               IntelligentTieringConfigurations,
//	                               MetricsConfigurations, AccessControl
//	AWS::Serverless::Function      Policies, Role                             kept as data, not enforced (no IAM locally)
//	                               Tracing                                    kept; no X-Ray locally
//	                               AutoPublishAlias, AutoPublishCodeSha256,   ignored (one unversioned function)
//	                               DeploymentPreference, VersionDescription,
//	                               ProvisionedConcurrencyConfig, SnapStart
//	                               DeadLetterQueue, EventInvokeConfig         ignored (asynchronous invocation is not used)
//	                               EphemeralStorage, LoggingConfig,           ignored
//	                               RecursiveLoop, RuntimeManagementConfig,
//	                               KmsKeyArn, PermissionsBoundary,
//	                               AssumeRolePolicyDocument, RolePath,
//	                               VpcConfig
//	  event SQS, DynamoDB          KmsKeyArn, MetricsConfig                   ignored
//	  event Schedule               DeadLetterConfig, RetryPolicy              ignored
//	  event ScheduleV2             GroupName, FlexibleTimeWindow, StartDate,  ignored
//	                               EndDate, DeadLetterConfig, RetryPolicy,
//	                               KmsKeyArn, RoleArn, PermissionsBoundary,
//	                               OmitName
//	  event HttpApi                RouteSettings                              ignored
//	AWS::Serverless::HttpApi       AccessLogSettings, DefaultRouteSettings,   ignored
//	                               RouteSettings, StageVariables,
//	                               FailOnWarnings, DisableExecuteApiEndpoint,
//	                               Auth.EnableIamAuthorizer
//	AWS::Serverless::StateMachine  Policies, Role                             kept as data, not enforced
//	                               Logging, Tracing, PermissionsBoundary,     ignored
//	                               RolePath, AutoPublishAlias,
//	                               DeploymentPreference, UseAliasAsEventTarget
//	AWS::CloudWatch::Alarm         all properties                             kept as data; evaluated by package alarms
//	                               EvaluateLowSampleCountPercentile           ignored
//	AWS::SSM::Parameter            AllowedPattern, DataType, Policies, Tier   ignored
//	AWS::KMS::Key                  Description                                resolved only (Ref: the logical id, Arn);
//	                               KeyPolicy, EnableKeyRotation, KeySpec,     nothing is created: the emulated services
//	                               KeyUsage, MultiRegion, Enabled, Origin,    do not encrypt
//	                               PendingWindowInDays, Tags
//	AWS::Logs::LogGroup            RetentionInDays                            kept as data
//	                               KmsKeyId, LogGroupClass,                   ignored
//	                               DataProtectionPolicy
//	AWS::IAM::Role                 AssumeRolePolicyDocument,                  kept as data, not enforced (no IAM locally);
//	                               ManagedPolicyArns, Policies                Ref is the name, Arn arn:aws:iam::<account>:role/<name>
//	                               Description, Path, MaxSessionDuration,     ignored
//	                               PermissionsBoundary
//	AWS::S3::BucketPolicy          Bucket, PolicyDocument                     kept as data, not enforced
//	AWS::CloudWatch::Dashboard     DashboardBody (must be JSON)               kept as data (the emulator serves no dashboards)
//	AWS::Cognito::UserPool         the properties of cognito.go               nothing is provisioned: the local cloud's issuer
//	                               (LambdaConfig is refused)                  stands in for the pool and the gateway trusts it;
//	AWS::Cognito::UserPoolClient   the properties of cognito.go               the settings a security check reads are kept
//	AWS::Cognito::UserPoolGroup    the properties of cognito.go               as data (UserPool, UserPoolClient, UserPoolGroup)
//
// A user pool's Ref is "<region>_<LogicalId>" and its ProviderURL
// (the issuer of its tokens) https://cognito-idp.<region>.amazonaws.com/<Ref>;
// an app client's Ref is its logical ID in lower case. LambdaConfig is
// refused: a trigger such as pre-token generation changes the claims the
// API sees, which the local issuer does not reproduce.
package template
