// Package securitytest holds the static security checks of the Club
// backend's SAM template (docs/security.md) and the tests that run them on
// infra/template.yaml: least privilege, encryption at rest, the API's
// authentication, secrets kept out of function environments, and that
// events carry no personal data.
//
// The checks read the template through the local cloud's own parser
// (localcloud/template), so they see exactly the resources,
// resolved names and ARNs that both `sam deploy` and the local cloud use.
// Each check returns findings, one per violation, naming the resource; an
// empty result is a pass. They are plain functions over a parsed stack and
// are safe for concurrent use.
//
// # Least privilege ([LeastPrivilege])
//
// Every function and state machine policy is written as IAM statements, in
// its Policies or in the inline policies of an explicit AWS::IAM::Role of the
// stack (a managed policy name, a SAM policy template, a role from outside
// the stack or a NotAction/NotResource statement cannot be checked and is a
// finding; a role may attach the managed policies that grant only logs and
// X-Ray). On
// the data services (DynamoDB, SQS, SNS, S3, Step Functions, KMS, Secrets
// Manager, SSM) no statement may grant a wildcard action or a wildcard
// resource; the exceptions are Step Functions' task-token callbacks
// (SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat), which IAM cannot
// scope to a resource, and kms:Decrypt on the keys of the stack's own
// account under a StringEquals kms:ViaService condition naming SSM or
// Secrets Manager (the service decrypts only the parameter or secret the
// function may read), and a key pattern of one of the stack's buckets
// (arn:aws:s3:::bucket/exports/*: object permissions name keys that do not
// exist yet; the bucket scopes them), and the streams of one of the stack's
// tables (TABLE_ARN/stream/*, the form AWS documents for an event source
// mapping's DescribeStream, GetRecords, GetShardIterator and ListStreams). A statement that allows any action other than a read
// on a table, queue, topic, bucket or state machine must name one the
// function uses: one named by its environment variables (table name, queue
// URL, topic ARN, ...), one of its event sources (an SQS queue, a table's
// stream, a stream mapping's on-failure destination), or, for a state
// machine, one of its DefinitionSubstitutions. A write to anything outside
// the stack is a finding too.
//
// Queue policies may let a service principal send only under an
// aws:SourceArn condition, and never open a queue to "*".
//
// # Item-scoped writes ([ItemScopedWrites])
//
// A function that writes only some items of a shared table (the outbox
// sweeper, its lease in the club table) is named with those items'
// partition keys; every statement that lets it write the table must carry
// a ForAllValues:StringEquals dynamodb:LeadingKeys condition naming only
// them.
//
// # Key policies ([KeyPolicies])
//
// On the transformed template: no KMS key policy statement is open to
// "*", and one that lets an AWS service use the key needs an
// aws:SourceAccount or aws:SourceArn condition (the confused deputy).
//
// # The roles AWS creates ([Transform], [GeneratedRoles])
//
// The checks above read the SAM template; SAM adds to it. [Transform] runs
// the AWS SAM translator (infra/sam-transform.py, Python with
// aws-sam-translator) and [GeneratedRoles] checks every AWS::IAM::Role of
// the result, the roles SAM generates included, by the same wildcard rules,
// and the managed policies SAM attaches by their published statements:
// AWSLambdaSQSQueueExecutionRole and AWSLambdaDynamoDBExecutionRole grant
// queue and stream actions on "*", so a function with an SQS or DynamoDB
// event source has a role the template writes. The tests of the transformed
// template (log groups, the bucket policy, CORS, the dashboard) read the
// same [CFN] value.
//
// # Encryption at rest ([EncryptionAtRest])
//
// Every DynamoDB table has SSESpecification.SSEEnabled (a KMS key, auditable
// in CloudTrail), every SQS queue SqsManagedSseEnabled or a KMS key, every SNS
// topic a KMS key, every S3 bucket a BucketEncryption rule.
//
// # Private buckets ([PrivateBuckets])
//
// Every S3 bucket turns on all four PublicAccessBlockConfiguration settings:
// its files are reached only through presigned URLs.
//
// # Authentication ([APIAuth])
//
// Every HTTP API route has a JWT authorizer except the public ones given;
// when the template creates a Cognito user pool, every authorizer trusts
// exactly that pool (issuer = its ProviderURL) and one of its app clients
// (audience), and the pool's settings the API relies on hold (see the
// function).
//
// # Secrets ([Secrets])
//
// No function environment variable holds a secret: not a NoEcho parameter's
// value, not a value under a name that announces a secret (SECRET, PASSWORD,
// API_KEY, ..._TOKEN) unless it is a reference (an SSM parameter name or an
// ARN), and nothing that looks like one (a dynamic reference, an access key,
// a private key, a provider key, a long random-looking string). Functions
// get the name of a SecureString parameter and read it at start.
//
// # Personal data ([PersonalData])
//
// A JSON document (an event, an outbox row's payload) carries personal data
// when a member's name announces it (email, display_name, phone, ...) or a
// string holds an e-mail address. The tests run it on every stored event
// example and on every member the event types can write; the end-to-end
// suite runs it on the outbox rows the API wrote.
package securitytest
