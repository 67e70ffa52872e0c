// Package provision creates a parsed template's resources on an AWS
// endpoint — the local cloud's front or the emulator behind it — with the
// real AWS SDK v2 clients, so the stack exists exactly as any AWS tool would
// see it: listable, describable, and reachable by the names the template
// computed.
//
// # What is created
//
//	Template resource              Calls                                          Notes
//	-----------------------------  ---------------------------------------------  -------------------------------------------
//	AWS::DynamoDB::Table           CreateTable, DescribeTimeToLive,               GSIs, LSIs, StreamSpecification (the front
//	                               UpdateTimeToLive                               starts recording the stream on seeing it);
//	                                                                              always PAY_PER_REQUEST
//	AWS::SQS::Queue                GetQueueUrl, CreateQueue | SetQueueAttributes  dead-letter queues first; RedrivePolicy as
//	                                                                              the JSON attribute
//	AWS::SNS::Topic                CreateTopic
//	AWS::SNS::Subscription,        ListSubscriptionsByTopic, Subscribe |          RawMessageDelivery, FilterPolicy,
//	Topic.Subscription             SetSubscriptionAttributes                      FilterPolicyScope, RedrivePolicy
//	AWS::S3::Bucket                CreateBucket (path-style addressing)
//	AWS::SSM::Parameter            PutParameter (Overwrite)
//	AWS::Serverless::Function      CreateFunction | UpdateFunctionConfiguration   runtime provided.al2023, a placeholder zip,
//	                                                                              Options.Role; the local cloud runs the
//	                                                                              binary built from CodeUri instead
//	  SQS and DynamoDB events      ListEventSourceMappings,                       every setting is sent; the emulator keeps
//	                               CreateEventSourceMapping |                     only function, source, batch size, window
//	                               UpdateEventSourceMapping                       and Enabled, so pollers read the rest from
//	                                                                              the template
//	AWS::Serverless::StateMachine  (none)                                         run by the local cloud's executor; its ARN
//	                                                                              is reported in the Result
//
// Not created: HTTP APIs and schedules (served and fired by the local cloud
// from the template), alarms, log groups and queue policies (kept as data in
// the template model), reserved concurrency (the emulator has no
// PutFunctionConcurrency; the function runner reads it from the template).
//
// # Contracts
//
//   - Order: resources are created by dependency, targets before what
//     references them: tables, queues (each dead-letter queue before the
//     queues redriving to it), topics, buckets, SSM parameters, functions,
//     subscriptions, event source mappings.
//   - Idempotent: Apply may run again on the same endpoint. An existing
//     table or bucket is kept as it is; an existing queue, function,
//     subscription (same topic, protocol and endpoint) or event source
//     mapping (same function and source) is updated to the template's
//     settings; SSM parameters are overwritten. Nothing is duplicated, which
//     matters because the emulator's Subscribe and CreateEventSourceMapping
//     add a new entry on every call. Resources the template no longer has
//     are not deleted.
//   - Failure: Apply stops at the first failed call and returns an error
//     naming the resource kind, logical ID and physical name, wrapping the
//     AWS error (errors.As finds the smithy.APIError).
//   - Concurrency: Apply makes its calls one at a time; two Apply calls for
//     the same stack must not overlap (both could create a subscription).
package provision
