package conformance_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/internal/snsfix"
)

const filterPoliciesDoc = "https://docs.aws.amazon.com/sns/latest/dg/sns-subscription-filter-policies.html"

// topicAndQueue is a new topic and a new queue that SNS may deliver to.
type topicAndQueue struct {
	sns            *sns.Client
	sqs            *sqs.Client
	topic, queue   string
	queueArn       string
	subscriptionID string
}

func newTopicAndQueue(t *testing.T, prefix string) *topicAndQueue {
	t.Helper()
	ctx := context.Background()
	cfg := msgConfig(t)
	tq := &topicAndQueue{sns: sns.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg)}
	tq.queue = newQueue(t, tq.sqs, prefix, nil)
	attrs, err := tq.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &tq.queue, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	tq.queueArn = attrs.Attributes["QueueArn"]
	topic, err := tq.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(tq.queue[strings.LastIndexByte(tq.queue, '/')+1:])})
	require.NoError(t, err)
	tq.topic = aws.ToString(topic.TopicArn)
	return tq
}

// subscribe subscribes the queue with raw delivery and the attributes.
func (tq *topicAndQueue) subscribe(attrs map[string]string) (string, error) {
	all := map[string]string{"RawMessageDelivery": "true"}
	for k, v := range attrs {
		all[k] = v
	}
	out, err := tq.sns.Subscribe(context.Background(), &sns.SubscribeInput{TopicArn: &tq.topic, Protocol: aws.String("sqs"),
		Endpoint: &tq.queueArn, Attributes: all, ReturnSubscriptionArn: true})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.SubscriptionArn), nil
}

func (tq *topicAndQueue) publish(t *testing.T, body string, attrs map[string]snstypes.MessageAttributeValue) error {
	t.Helper()
	_, err := tq.sns.Publish(context.Background(), &sns.PublishInput{TopicArn: &tq.topic, Message: aws.String(body), MessageAttributes: attrs})
	return err
}

// delivered publishes a sentinel message the subscription's policy accepts
// (the cases give its attributes), waits for it, and returns the bodies
// received before it, in any order.
func (tq *topicAndQueue) delivered(t *testing.T, sentinel map[string]snstypes.MessageAttributeValue) []string {
	t.Helper()
	return tq.deliveredBefore(t, "sentinel", sentinel)
}

func (tq *topicAndQueue) deliveredBefore(t *testing.T, sentinelBody string, sentinel map[string]snstypes.MessageAttributeValue) []string {
	t.Helper()
	require.NoError(t, tq.publish(t, sentinelBody, sentinel))
	var bodies []string
	deadline := patience.Deadline()
	for {
		out, err := tq.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &tq.queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		require.NoError(t, err)
		for _, m := range out.Messages {
			_, err := tq.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &tq.queue, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
			if aws.ToString(m.Body) == sentinelBody {
				return bodies
			}
			bodies = append(bodies, aws.ToString(m.Body))
		}
		require.True(t, time.Now().Before(deadline), "the sentinel did not arrive (received %v)", bodies)
	}
}

func str(v string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func num(v string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(v)}
}

// filterCase subscribes with policy; if the local cloud refuses it, the
// refusal must name feature; if it accepts it, each message is delivered
// exactly when SNS would deliver it.
func filterCase(t *testing.T, policy, scope, feature string, messages map[string]map[string]snstypes.MessageAttributeValue, want []string, sentinel map[string]snstypes.MessageAttributeValue) {
	t.Helper()
	tq := newTopicAndQueue(t, "conformance-filter")
	attrs := map[string]string{"FilterPolicy": policy}
	if scope != "" {
		attrs["FilterPolicyScope"] = scope
	}
	_, err := tq.subscribe(attrs)
	if err != nil {
		refusedByDesign(t, err, feature)
		return
	}
	for body, a := range messages {
		require.NoError(t, tq.publish(t, body, a))
	}
	require.ElementsMatch(t, want, tq.delivered(t, sentinel), "policy %s", policy)
}

// A numeric range: {"numeric": [">", 100]} matches a Number attribute of
// 150 and not one of 50 (on main the subscription received nothing).
func TestSNSFilterPolicyNumericRange(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"price":[{"numeric":[">",100]}]}`, "", snsfix.FeatureNumeric,
		map[string]map[string]snstypes.MessageAttributeValue{"cheap": {"price": num("50")}, "dear": {"price": num("150")}},
		[]string{"dear"}, map[string]snstypes.MessageAttributeValue{"price": num("1000")})
}

// An exact numeric value matches the number, however it is written.
func TestSNSFilterPolicyExactNumber(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"seats":[100]}`, "", snsfix.FeatureNumeric,
		map[string]map[string]snstypes.MessageAttributeValue{"hundred": {"seats": num("100.0")}, "other": {"seats": num("101")}},
		[]string{"hundred"}, map[string]snstypes.MessageAttributeValue{"seats": num("100")})
}

// anything-but of strings matches every other value, not a missing key.
func TestSNSFilterPolicyAnythingButStrings(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"type":[{"anything-but":["enrollment.cancelled","refund"]}]}`, "", "",
		map[string]map[string]snstypes.MessageAttributeValue{
			"created": {"type": str("enrollment.created")}, "cancelled": {"type": str("enrollment.cancelled")},
			"refund": {"type": str("refund")}, "untyped": {"other": str("x")},
		},
		[]string{"created"}, map[string]snstypes.MessageAttributeValue{"type": str("sentinel")})
}

// anything-but with a prefix.
func TestSNSFilterPolicyAnythingButPrefix(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"type":[{"anything-but":{"prefix":"enrollment."}}]}`, "", snsfix.FeatureAnythingButMore,
		map[string]map[string]snstypes.MessageAttributeValue{"created": {"type": str("enrollment.created")}, "refund": {"type": str("refund")}},
		[]string{"refund"}, map[string]snstypes.MessageAttributeValue{"type": str("sentinel")})
}

// prefix matching (what the club's Analytics and Roster subscriptions use).
func TestSNSFilterPolicyPrefix(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"type":[{"prefix":"enrollment."}]}`, "", "",
		map[string]map[string]snstypes.MessageAttributeValue{"created": {"type": str("enrollment.created")}, "refund": {"type": str("refund.created")}},
		[]string{"created"}, map[string]snstypes.MessageAttributeValue{"type": str("enrollment.sentinel")})
}

// suffix matching.
func TestSNSFilterPolicySuffix(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"file":[{"suffix":".csv"}]}`, "", snsfix.FeatureSuffix,
		map[string]map[string]snstypes.MessageAttributeValue{"csv": {"file": str("roster.csv")}, "pdf": {"file": str("roster.pdf")}},
		[]string{"csv"}, map[string]snstypes.MessageAttributeValue{"file": str("s.csv")})
}

// equals-ignore-case matching.
func TestSNSFilterPolicyEqualsIgnoreCase(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"level":[{"equals-ignore-case":"urgent"}]}`, "", snsfix.FeatureIgnoreCase,
		map[string]map[string]snstypes.MessageAttributeValue{"upper": {"level": str("URGENT")}, "low": {"level": str("low")}},
		[]string{"upper"}, map[string]snstypes.MessageAttributeValue{"level": str("Urgent")})
}

// exists false matches a message without the key.
func TestSNSFilterPolicyExistsFalse(t *testing.T) {
	cite(t, filterPoliciesDoc)
	filterCase(t, `{"test":[{"exists":false}]}`, "", "",
		map[string]map[string]snstypes.MessageAttributeValue{"real": {"type": str("a")}, "test": {"test": str("yes")}},
		[]string{"real"}, map[string]snstypes.MessageAttributeValue{"type": str("b")})
}

// A String.Array attribute matches a policy when any element does.
func TestSNSFilterPolicyOnStringArray(t *testing.T) {
	cite(t, filterPoliciesDoc)
	tq := newTopicAndQueue(t, "conformance-array")
	_, err := tq.subscribe(map[string]string{"FilterPolicy": `{"tags":["urgent"]}`})
	require.NoError(t, err)
	arr := func(v string) snstypes.MessageAttributeValue {
		return snstypes.MessageAttributeValue{DataType: aws.String("String.Array"), StringValue: aws.String(v)}
	}
	err = tq.publish(t, "tagged", map[string]snstypes.MessageAttributeValue{"tags": arr(`["mail","urgent"]`)})
	if err != nil {
		refusedByDesign(t, err, snsfix.FeatureStringArray)
		return
	}
	require.NoError(t, tq.publish(t, "untagged", map[string]snstypes.MessageAttributeValue{"tags": arr(`["mail"]`)}))
	require.ElementsMatch(t, []string{"tagged"}, tq.delivered(t, map[string]snstypes.MessageAttributeValue{"tags": str("urgent")}))
}

// FilterPolicyScope MessageBody filters on the JSON body.
func TestSNSFilterPolicyScopeMessageBody(t *testing.T) {
	cite(t, filterPoliciesDoc)
	tq := newTopicAndQueue(t, "conformance-body")
	_, err := tq.subscribe(map[string]string{"FilterPolicy": `{"type":["enrollment.created"]}`, "FilterPolicyScope": "MessageBody"})
	if err != nil {
		refusedByDesign(t, err, snsfix.FeatureMessageBody)
		return
	}
	require.NoError(t, tq.publish(t, `{"type":"enrollment.created"}`, nil))
	require.NoError(t, tq.publish(t, `{"type":"refund"}`, nil))
	bodies := tq.deliveredBefore(t, `{"type":"enrollment.created","sentinel":true}`, nil)
	require.ElementsMatch(t, []string{`{"type":"enrollment.created"}`}, bodies)
}

// A policy that is not JSON is refused as SNS refuses it.
func TestSNSFilterPolicyNotJSONIsInvalid(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html")
	tq := newTopicAndQueue(t, "conformance-badpolicy")
	_, err := tq.subscribe(map[string]string{"FilterPolicy": `{"type": [`})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "InvalidParameter", apiErr.ErrorCode())
}

// Subscribing the same endpoint twice returns the same subscription; with
// other attributes it is refused.
func TestSNSSubscribeTwiceIsIdempotent(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html")
	tq := newTopicAndQueue(t, "conformance-twice")
	first, err := tq.subscribe(map[string]string{"FilterPolicy": `{"type":["a"]}`})
	require.NoError(t, err)
	second, err := tq.subscribe(map[string]string{"FilterPolicy": `{"type": ["a"]}`})
	require.NoError(t, err)
	require.Equal(t, first, second)
	_, err = tq.subscribe(map[string]string{"FilterPolicy": `{"type":["b"]}`})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "InvalidParameter", apiErr.ErrorCode())
	require.Contains(t, apiErr.ErrorMessage(), "already exists with different attributes")
	list, err := tq.sns.ListSubscriptionsByTopic(context.Background(), &sns.ListSubscriptionsByTopicInput{TopicArn: &tq.topic})
	require.NoError(t, err)
	require.Len(t, list.Subscriptions, 1)
}

// A Binary message attribute reaches an SQS subscriber with its bytes:
// as an SQS Binary attribute with raw delivery, base64 in the envelope
// otherwise.
func TestSNSBinaryAttributeIsDelivered(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/sns/latest/dg/sns-message-attributes.html")
	ctx := context.Background()
	tq := newTopicAndQueue(t, "conformance-binary")
	_, err := tq.subscribe(nil)
	require.NoError(t, err)
	blob := []byte{0, 1, 2, 0xfe, 0xff}
	err = tq.publish(t, "binary", map[string]snstypes.MessageAttributeValue{"sig": {DataType: aws.String("Binary"), BinaryValue: blob}})
	if err != nil {
		refusedByDesign(t, err, snsfix.FeatureBinary)
		return
	}
	m := receiveOne(t, tq.sqs, &sqs.ReceiveMessageInput{QueueUrl: &tq.queue, MessageAttributeNames: []string{"All"}})
	require.Equal(t, blob, m.MessageAttributes["sig"].BinaryValue, "raw delivery")

	env := newTopicAndQueue(t, "conformance-binary-env")
	_, err = env.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: &env.topic, Protocol: aws.String("sqs"), Endpoint: &env.queueArn})
	require.NoError(t, err)
	require.NoError(t, env.publish(t, "binary", map[string]snstypes.MessageAttributeValue{"sig": {DataType: aws.String("Binary"), BinaryValue: blob}}))
	em := receiveOne(t, env.sqs, &sqs.ReceiveMessageInput{QueueUrl: &env.queue})
	var envelope struct {
		MessageAttributes map[string]struct{ Type, Value string }
	}
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(em.Body)), &envelope))
	require.Equal(t, "Binary", envelope.MessageAttributes["sig"].Type)
	require.Equal(t, base64.StdEncoding.EncodeToString(blob), envelope.MessageAttributes["sig"].Value)
}

// An action SNS does not have is answered in the Query protocol's XML,
// with the code InvalidAction, never in JSON.
func TestSNSUnknownActionIsAnsweredInXML(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/sns/latest/api/CommonErrors.html")
	form := url.Values{"Action": {"NoSuchAction"}, "Version": {"2010-03-31"}}
	req, err := http.NewRequest(http.MethodPost, msgEndpoint(t)+"/", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	var e struct {
		Code string `xml:"Error>Code"`
	}
	require.NoError(t, xml.Unmarshal(body, &e), "an XML error: %s", body)
	require.Equal(t, "InvalidAction", e.Code)
}

// A Number message attribute reaches an SQS subscriber (raw delivery) as a
// Number attribute with its value.
func TestSNSNumberAttributeIsDelivered(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/sns/latest/dg/sns-message-attributes.html")
	tq := newTopicAndQueue(t, "conformance-number")
	_, err := tq.subscribe(nil)
	require.NoError(t, err)
	err = tq.publish(t, "numbered", map[string]snstypes.MessageAttributeValue{"attempt": num("3")})
	if err != nil {
		refusedByDesign(t, err, snsfix.FeatureNumber)
		return
	}
	m := receiveOne(t, tq.sqs, &sqs.ReceiveMessageInput{QueueUrl: &tq.queue, MessageAttributeNames: []string{"attempt"}})
	require.Equal(t, "Number", aws.ToString(m.MessageAttributes["attempt"].DataType))
	require.Equal(t, "3", aws.ToString(m.MessageAttributes["attempt"].StringValue))
}
