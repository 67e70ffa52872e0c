package front

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// snsOnKumo is an SNS client of a front on kumo and a new topic.
func snsOnKumo(t *testing.T) (*sns.Client, string, string) {
	t.Helper()
	u, _ := frontOnKumo(t)
	c := sns.NewFromConfig(sdkConfig(u, "test", "test"))
	topic, err := c.CreateTopic(context.Background(), &sns.CreateTopicInput{Name: aws.String(uniqueName("fix-topic"))})
	require.NoError(t, err)
	return c, aws.ToString(topic.TopicArn), u
}

// TestFilterPolicyKumoCannotEvaluateIsRefused: kumo accepted a numeric
// range and then delivered nothing for it.
func TestFilterPolicyKumoCannotEvaluateIsRefused(t *testing.T) {
	t.Parallel()
	c, topic, _ := snsOnKumo(t)
	_, err := c.Subscribe(context.Background(), &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:numeric"), Attributes: map[string]string{"FilterPolicy": `{"price":[{"numeric":[">",100]}]}`}})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "InvalidParameter", apiErr.ErrorCode())
	require.Contains(t, apiErr.ErrorMessage(), "numeric matching is not supported by the local cloud")

	ok, err := c.Subscribe(context.Background(), &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), ReturnSubscriptionArn: true,
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:prefix"), Attributes: map[string]string{"FilterPolicy": `{"type":[{"prefix":"enrollment."}]}`}})
	require.NoError(t, err, "what the club's subscriptions use")
	_, err = c.SetSubscriptionAttributes(context.Background(), &sns.SetSubscriptionAttributesInput{SubscriptionArn: ok.SubscriptionArn,
		AttributeName: aws.String("FilterPolicyScope"), AttributeValue: aws.String("MessageBody")})
	require.ErrorAs(t, err, &apiErr)
	require.Contains(t, apiErr.ErrorMessage(), "FilterPolicyScope MessageBody is not supported by the local cloud")
}

// TestSubscribeTwiceReturnsTheSameSubscription: kumo made a second one.
func TestSubscribeTwiceReturnsTheSameSubscription(t *testing.T) {
	t.Parallel()
	c, topic, _ := snsOnKumo(t)
	in := &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"), ReturnSubscriptionArn: true,
		Endpoint: aws.String("arn:aws:sqs:us-east-1:000000000000:twice"), Attributes: map[string]string{"RawMessageDelivery": "true"}}
	first, err := c.Subscribe(context.Background(), in)
	require.NoError(t, err)
	second, err := c.Subscribe(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, aws.ToString(first.SubscriptionArn), aws.ToString(second.SubscriptionArn))
}

// TestBinaryAttributeIsRefusedOnKumo: kumo delivered it empty in the
// envelope; and a Number attribute.
func TestBinaryAttributeIsRefusedOnKumo(t *testing.T) {
	t.Parallel()
	c, topic, _ := snsOnKumo(t)
	_, err := c.Publish(context.Background(), &sns.PublishInput{TopicArn: &topic, Message: aws.String("m"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"sig": {DataType: aws.String("Binary"), BinaryValue: []byte{1}}}})
	require.ErrorContains(t, err, "SNS message attributes of type Binary are not supported by the local cloud")
	// kumo could not read a Publish with a Number attribute at all
	// ("Failed to parse request body"): refused, named.
	_, err = c.Publish(context.Background(), &sns.PublishInput{TopicArn: &topic, Message: aws.String("m"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String("3")}}})
	require.ErrorContains(t, err, "SNS message attributes of type Number are not supported by the local cloud")
}

// TestUnknownSNSActionIsAnsweredInXML: kumo answered a Query client in JSON.
func TestUnknownSNSActionIsAnsweredInXML(t *testing.T) {
	t.Parallel()
	_, _, u := snsOnKumo(t)
	req, err := http.NewRequest(http.MethodPost, u+"/", strings.NewReader("Action=NoSuchAction&Version=2010-03-31"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, string(body), "<Code>InvalidAction</Code>")
}
