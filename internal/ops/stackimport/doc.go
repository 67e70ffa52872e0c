// Package stackimport builds a stack file (package stackfile) from a deployed
// CloudFormation stack, so that clubctl and the end-to-end tests reach a stack
// on AWS or LocalStack exactly as they reach the local cloud, whose stack file
// the local cloud writes itself.
//
// [Import] reads the stack's outputs and parameters (DescribeStacks) and its
// resources (ListStackResources, paginated: DescribeStackResources stops at
// 100 resources, fewer than a SAM stack of this size expands to) and maps
// every resource by logical id into the stack file's maps:
//
//	AWS::SQS::Queue                  queues          queue URL (the physical id)
//	AWS::DynamoDB::Table             tables          table name
//	AWS::SNS::Topic                  topics          topic ARN
//	AWS::Lambda::Function            functions       function name (SAM keeps the logical id)
//	AWS::StepFunctions::StateMachine state_machines  state machine ARN
//	AWS::S3::Bucket                  buckets         bucket name
//
// The ApiUrl output becomes api_url, the JwtIssuer and JwtAudience parameters
// issuer_url and jwt_audience. Template parameters are copied into outputs
// under their own names (unless an output has that name), so that readers
// find settings such as InboxRetentionDays or UrgentMaxAgeSeconds in one
// place; NoEcho parameters, which CloudFormation returns masked, are left
// out. The stack file never gets issuer_key_file: only the local cloud has an
// issuer key, and its presence is how readers tell the local cloud apart.
//
// Import only reads; it is safe to run at any time and from several
// processes. A stack that failed to create or is being deleted is refused.
package stackimport
