package integrations

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
)

// Config lists the dependencies of the integrations; a nil one leaves its
// resources unregistered, so definitions using them are rejected.
type Config struct {
	Invoker  invoke.Invoker
	DynamoDB DynamoDBAPI
	SQS      SQSAPI
	SNS      SNSAPI
}

// FromAWSConfig builds the DynamoDB, SQS and SNS clients from an aws.Config
// (in the local cloud, one whose BaseEndpoint is the local endpoint).
func FromAWSConfig(cfg aws.Config, inv invoke.Invoker) Config {
	return Config{
		Invoker:  inv,
		DynamoDB: dynamodb.NewFromConfig(cfg),
		SQS:      sqs.NewFromConfig(cfg),
		SNS:      sns.NewFromConfig(cfg),
	}
}

// Register adds every integration whose dependency is set to r.
func Register(r *sfn.Resources, c Config) {
	if c.Invoker != nil {
		NewLambda(c.Invoker).Register(r)
	}
	if c.DynamoDB != nil {
		NewDynamoDB(c.DynamoDB).Register(r)
	}
	if c.SQS != nil {
		NewSQS(c.SQS).Register(r)
	}
	if c.SNS != nil {
		NewSNS(c.SNS).Register(r)
	}
}

// runtimeError fails a task with States.Runtime: the request could not be
// built from the effective input. Like AWS, the executor neither retries
// nor catches it.
func runtimeError(format string, args ...any) error {
	return &sfn.TaskError{Name: "States.Runtime", Cause: fmt.Sprintf(format, args...)}
}

// serviceError names an SDK error the way Step Functions does for its
// optimized integrations: "<Service>.<ErrorCode>", with the AWS SDK for
// Java's message format as the cause.
func serviceError(service, sdkService string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		reqID := ""
		var re interface{ ServiceRequestID() string }
		if errors.As(err, &re) {
			reqID = re.ServiceRequestID()
		}
		return &sfn.TaskError{Name: service + "." + ae.ErrorCode(),
			Cause: fmt.Sprintf("%s (Service: %s; Status Code: 400; Error Code: %s; Request ID: %s; Proxy: null)",
				ae.ErrorMessage(), sdkService, ae.ErrorCode(), reqID)}
	}
	return &sfn.TaskError{Name: service + ".SdkClientException", Cause: err.Error()}
}

// sdkMetadata returns the SdkHttpMetadata and SdkResponseMetadata fields
// that Step Functions adds to an integration's result.
func sdkMetadata(md middleware.Metadata) map[string]any {
	reqID, _ := awsmiddleware.GetRequestIDMetadata(md)
	return map[string]any{
		"SdkHttpMetadata": map[string]any{
			"AllHttpHeaders": map[string]any{"Content-Type": []string{"application/x-amz-json-1.0"}, "x-amzn-RequestId": []string{reqID}},
			"HttpHeaders":    map[string]any{"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": reqID},
			"HttpStatusCode": 200,
		},
		"SdkResponseMetadata": map[string]any{"RequestId": reqID},
	}
}

func marshal(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode task result: %w", err)
	}
	return b, nil
}

// checkFields reports fields not in allowed and required fields missing.
func checkFields(resource string, fields, allowed, required []string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	have := map[string]bool{}
	var problems []string
	for _, f := range fields {
		have[f] = true
		if !ok[f] {
			problems = append(problems, fmt.Sprintf("the field %q is not supported by %s", f, resource))
		}
	}
	for _, r := range required {
		if !have[r] {
			problems = append(problems, fmt.Sprintf("the field %q is required by %s", r, resource))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// textOf returns a message body: a JSON string as is, any other JSON value
// as its JSON text.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
