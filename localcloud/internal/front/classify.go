package front

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// targetServices maps the X-Amz-Target prefix of JSON-protocol services to
// the service name used in SigV4 credential scopes.
var targetServices = map[string]string{
	"DynamoDB_20120810":                 "dynamodb",
	"DynamoDBStreams_20120810":          "dynamodbstreams",
	"AmazonSQS":                         "sqs",
	"AWSStepFunctions":                  "states",
	"AmazonSSM":                         "ssm",
	"AWSEvents":                         "events",
	"Logs_20140328":                     "logs",
	"GraniteServiceVersion20100801":     "monitoring",
	"AWSCognitoIdentityProviderService": "cognito-idp",
	"secretsmanager":                    "secretsmanager",
}

// scopeRE extracts the service from a SigV4 Authorization header:
// "Credential=AKID/20260101/us-east-1/sqs/aws4_request".
var scopeRE = regexp.MustCompile(`Credential=[^/]+/\d{8}/[^/]+/([^/]+)/aws4_request`)

// lambdaInvokeRE matches the Lambda Invoke REST path.
var lambdaInvokeRE = regexp.MustCompile(`^/2015-03-31/functions/([^/]+)/invocations$`)

// classify names the AWS operation a request calls. It may read (and then
// restore) a form-encoded body to find a Query-protocol Action.
func classify(r *http.Request) Op {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, _ := strings.Cut(t, ".")
		svc, ok := targetServices[prefix]
		if !ok {
			svc = strings.ToLower(prefix)
		}
		return Op{Service: svc, Operation: op}
	}
	svc := ""
	if m := scopeRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		svc = m[1]
	} else if scope, ok := parseCredential(r.URL.Query().Get(amzCredential)); ok {
		svc = scope.service // a presigned URL carries its scope in the query
	}
	if lambdaInvokeRE.MatchString(r.URL.Path) {
		return Op{Service: "lambda", Operation: "Invoke"}
	}
	if action := queryAction(r); action != "" {
		if svc == "" {
			svc = "query"
		}
		return Op{Service: svc, Operation: action}
	}
	if svc == "" {
		svc = "unknown"
	}
	return Op{Service: svc, Operation: restOperation(svc, r)}
}

// queryAction returns the Action of a Query-protocol request (SNS, and SQS
// from older clients), restoring the body for the next reader.
func queryAction(r *http.Request) string {
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	return form.Get("Action")
}

// restOperation gives REST-protocol calls (S3, the Lambda control plane) a
// readable operation name: the method and the first path segment.
func restOperation(svc string, r *http.Request) string {
	if svc == "s3" {
		switch r.Method {
		case http.MethodGet:
			return "GetObject"
		case http.MethodPut:
			return "PutObject"
		case http.MethodHead:
			return "HeadObject"
		case http.MethodDelete:
			return "DeleteObject"
		}
	}
	seg := strings.Trim(r.URL.Path, "/")
	if i := strings.IndexByte(seg, '/'); i >= 0 {
		seg = seg[:i]
	}
	return r.Method + " /" + seg
}
