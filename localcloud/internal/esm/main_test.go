package esm

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

// The emulator's services are process-wide singletons, so one server serves
// every test of the binary; tests isolate themselves with unique names.
var emulatorURL string

func TestMain(m *testing.M) {
	srv := kumo.NewServer()
	emulatorURL = srv.URL
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var testCreds = credentials.NewStaticCredentialsProvider("test", "test", "")

func newSQSClient() *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(emulatorURL), Credentials: testCreds})
}

func newSNSClient() *sns.Client {
	return sns.New(sns.Options{Region: "us-east-1", BaseEndpoint: aws.String(emulatorURL), Credentials: testCreds})
}

var (
	queueSeq    atomic.Int64
	unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// uniqueName derives a queue or topic name from the test name.
func uniqueName(t *testing.T, suffix string) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	return fmt.Sprintf("%s-%d-%s", name, queueSeq.Add(1), suffix)
}

// createQueue creates a queue and returns its URL and ARN.
func createQueue(t *testing.T, client *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	require.NoError(t, err)
	got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	arn = got.Attributes[string(types.QueueAttributeNameQueueArn)]
	require.NotEmpty(t, arn)
	return aws.ToString(out.QueueUrl), arn
}
