package opstest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/localcloud/sqsage"
	"github.com/clubdev/club/localcloud/testkit"
)

// Region is the region every test client uses.
const Region = "us-east-1"

// Endpoint starts a front for one test and returns its URL: requests under
// /_club/ go to club (404 when nil), everything else to the engine the tests
// run on now (testkit.URL: kumo, or moto in a package run by testkit.Run), through the
// local cloud's queue age tracker (package sqsage), which also answers GET
// /_club/queues/age as the local cloud does.
func Endpoint(t testing.TB, club http.Handler) string {
	t.Helper()
	target, err := url.Parse(testkit.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	// A transport of its own: closing any httptest server closes the idle
	// connections of http.DefaultTransport, which would cut responses that
	// other tests' fronts are relaying at that moment.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	proxy.Transport = sdkhttp.Transport(transport)
	proxy.ModifyResponse = func(r *http.Response) error {
		r.Header.Del("X-Amz-Crc32")
		return nil
	}
	ages := sqsage.New(proxy, nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_club/queues/age" {
			ages.Handler().ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/_club/") {
			if club == nil {
				http.NotFound(w, r)
				return
			}
			club.ServeHTTP(w, r)
			return
		}
		ages.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		front.Close()
		transport.CloseIdleConnections()
	})
	return front.URL
}

// AWSConfig is an SDK configuration for endpoint with static credentials,
// the test HTTP client (see HTTPClient) and no retries: a test that counts
// messages must see a failed call, not the effects of a silent retry (a
// retried receive hides messages, a retried send doubles them).
func AWSConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:           Region,
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(endpoint),
		HTTPClient:       HTTPClient,
		RetryMaxAttempts: 1,
	}
}

// HTTPClient is the HTTP client of the tests' SDK clients: the club's own
// (internal/sdkhttp), whose request bodies keep net/http's transport from
// closing a connection under an answer being read.
var HTTPClient = sdkhttp.New()

var seq atomic.Int64

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// Name returns a name unique in this test binary, derived from the test's
// name so that kumo's shared state stays readable: at most 60 characters of
// letters, digits and dashes.
func Name(t testing.TB, suffix string) string {
	base := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(base) > 40 {
		base = base[len(base)-40:]
	}
	return fmt.Sprintf("%s-%d-%s", base, seq.Add(1), suffix)
}

// Queues are a source queue and its dead-letter queue.
type Queues struct {
	Source, DLQ string // URLs
	SourceName  string
}

// CreateQueuePair creates a source queue whose redrive policy sends a
// message to a new dead-letter queue after maxReceiveCount receives.
func CreateQueuePair(t testing.TB, c *sqs.Client, maxReceiveCount int) Queues {
	t.Helper()
	ctx := context.Background()
	name := Name(t, "q")
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	require.NoError(t, err)
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"},
	})
	require.NoError(t, err)
	src, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String(name),
		Attributes: map[string]string{
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`,
				attrs.Attributes["QueueArn"], maxReceiveCount),
		},
	})
	require.NoError(t, err)
	return Queues{Source: *src.QueueUrl, DLQ: *dlq.QueueUrl, SourceName: name}
}

// CreateTables creates a club and an outbox table with unique names through
// store.CreateTables and returns the store configuration naming them.
func CreateTables(t testing.TB, db *dynamodb.Client) store.Config {
	t.Helper()
	cfg := store.Config{ClubTable: Name(t, "club"), OutboxTable: Name(t, "outbox")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, store.CreateTables(ctx, db, cfg))
	return cfg
}

// Fixture is a store on fresh tables with one class, for tests that need
// outbox rows written the way the producers write them.
type Fixture struct {
	Config store.Config
	Store  *store.Store
	Class  class.Class
}

// NewFixture creates the tables and a class with room for 10,000 students.
func NewFixture(t testing.TB, db *dynamodb.Client) *Fixture {
	t.Helper()
	cfg := CreateTables(t, db)
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	c, err := class.New(events.NewID(), "teacher-1", "Queues in practice", 10000, time.Now().Add(30*24*time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(context.Background(), c))
	return &Fixture{Config: cfg, Store: st, Class: c}
}

// Enroll commits an enrollment of student created at the given time through
// the store's own transaction, which writes the pending outbox row of its
// enrollment.created event, and returns that event.
func (f *Fixture) Enroll(t testing.TB, student string, at time.Time) events.Envelope {
	t.Helper()
	e, err := enrollment.New(events.NewID(), f.Class.ID(), student, f.Class.TeacherID(), at)
	require.NoError(t, err)
	env, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: f.Class.ID(), StudentID: student})
	require.NoError(t, err)
	fp, err := idempotency.Fingerprint("POST", "/classes/"+f.Class.ID()+"/enrollments", nil, student)
	require.NoError(t, err)
	require.NoError(t, f.Store.Enrollments.Create(context.Background(), enrollment.Creation{
		Enrollment: e, Event: env,
		Idempotency: idempotency.Record{
			Caller: student, Key: "key-" + e.ID(), Fingerprint: fp, ResourceID: e.ID(), CreatedAt: at,
			Response: idempotency.Response{Status: 201, Body: []byte(`{}`)},
		},
	}))
	return env
}

// Publish marks an event's outbox row published, as the relay does.
func (f *Fixture) Publish(t testing.TB, eventID string, at time.Time) {
	t.Helper()
	require.NoError(t, f.Store.Outbox.MarkPublished(context.Background(), eventID, at))
}
