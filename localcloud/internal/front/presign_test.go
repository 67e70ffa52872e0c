package front

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// presignFixture is a front before kumo that knows one access key, with a
// clock the test sets, and objects in a bucket.
type presignFixture struct {
	url     string
	counter *Counter
	clock   atomic.Pointer[time.Time] // nil: the wall clock
	bucket  string
}

func newPresignFixture(t *testing.T, bucket string, objects map[string]string) *presignFixture {
	t.Helper()
	fx := &presignFixture{bucket: uniqueName(bucket)}
	fx.url, fx.counter = frontOnKumo(t,
		WithCredentials(map[string]string{"local": "local"}),
		WithClock(func() time.Time {
			if at := fx.clock.Load(); at != nil {
				return *at
			}
			return time.Now()
		}))

	ctx := context.Background()
	c := fx.client("local", "local")
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(fx.bucket)})
	require.NoError(t, err)
	for key, body := range objects {
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(fx.bucket), Key: aws.String(key), Body: strings.NewReader(body)})
		require.NoError(t, err)
	}
	return fx
}

func (fx *presignFixture) client(accessKey, secret string) *s3.Client {
	return s3.NewFromConfig(sdkConfig(fx.url, accessKey, secret), func(o *s3.Options) { o.UsePathStyle = true })
}

// presign makes a GET URL the way an exporter does.
func (fx *presignFixture) presign(t *testing.T, accessKey, secret, key string, expires time.Duration) string {
	t.Helper()
	req, err := s3.NewPresignClient(fx.client(accessKey, secret)).PresignGetObject(context.Background(),
		&s3.GetObjectInput{Bucket: aws.String(fx.bucket), Key: aws.String(key)}, s3.WithPresignExpires(expires))
	require.NoError(t, err)
	require.Equal(t, http.MethodGet, req.Method)
	return req.URL
}

func (fx *presignFixture) setClock(at time.Time) { fx.clock.Store(&at) }

// signedAt is a presigned URL's X-Amz-Date.
func signedAt(t *testing.T, u string) time.Time {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	at, err := time.Parse(amzDateFormat, p.Query().Get("X-Amz-Date"))
	require.NoError(t, err)
	return at
}

type fetched struct {
	status int
	body   string
	err    s3Error
}

// fetch GETs u as a browser would: no Authorization, no AWS headers.
func fetch(t *testing.T, u string) fetched {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := fetched{status: resp.StatusCode, body: string(b)}
	if resp.StatusCode >= 300 {
		require.NoError(t, xml.Unmarshal(b, &out.err), string(b))
	}
	return out
}

// withQuery returns u with one query parameter changed.
func withQuery(t *testing.T, u, key, value string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

func TestPresignedGetIsVerifiedLikeS3(t *testing.T) {
	t.Parallel()
	const key = "exports/roster 2026+q1=final.csv" // characters that must reach the signer exactly as sent
	fx := newPresignFixture(t, "front-presign-exports", map[string]string{
		key:                 "student_id,enrolled_at\ns-1,2026-03-01T10:00:00Z\n",
		"exports/other.csv": "not yours\n",
	})
	valid := fx.presign(t, "local", "local", key, time.Minute)

	fx.counter.Reset()
	got := fetch(t, valid)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Equal(t, "student_id,enrolled_at\ns-1,2026-03-01T10:00:00Z\n", got.body)
	require.Equal(t, []OpCount{{Op: Op{Service: "s3", Operation: "GetObject"}, Count: 1}}, fx.counter.Snapshot(),
		"a presigned GET is an S3 GetObject")
	require.Equal(t, http.StatusOK, fetch(t, valid).status, "usable more than once until it expires")

	// Tampering with anything signed breaks the signature.
	otherPath := strings.Replace(valid, "roster%202026%2Bq1%3Dfinal.csv", "other.csv", 1)
	require.NotEqual(t, valid, otherPath)
	longer := withQuery(t, valid, "X-Amz-Expires", "604800")
	earlier := withQuery(t, valid, "X-Amz-Date", time.Now().UTC().Add(-time.Hour).Format(amzDateFormat))
	extra := withQuery(t, valid, "response-content-type", "text/html")
	for name, u := range map[string]string{"path": otherPath, "expiry": longer, "date": earlier, "added parameter": extra} {
		got := fetch(t, u)
		require.Equal(t, http.StatusForbidden, got.status, name)
		require.Equal(t, "SignatureDoesNotMatch", got.err.Code, name)
	}
	wrongSecret := fx.presign(t, "local", "not-the-secret", key, time.Minute)
	require.Equal(t, "SignatureDoesNotMatch", fetch(t, wrongSecret).err.Code)

	stranger := fetch(t, fx.presign(t, "AKIASTRANGER", "local", key, time.Minute))
	require.Equal(t, http.StatusForbidden, stranger.status)
	require.Equal(t, "InvalidAccessKeyId", stranger.err.Code)
	require.Equal(t, "AKIASTRANGER", stranger.err.AWSAccessKeyID)

	// Malformed authentication is a 400, as on S3.
	for name, u := range map[string]string{
		"expiry over a week": withQuery(t, valid, "X-Amz-Expires", "604801"),
		"expiry zero":        withQuery(t, valid, "X-Amz-Expires", "0"),
		"no signature":       withQuery(t, valid, "X-Amz-Signature", ""),
		"bad credential":     withQuery(t, valid, "X-Amz-Credential", "local/today"),
		"bad date":           withQuery(t, valid, "X-Amz-Date", "yesterday"),
	} {
		got := fetch(t, u)
		require.Equal(t, http.StatusBadRequest, got.status, name)
		require.Equal(t, "AuthorizationQueryParametersError", got.err.Code, name)
	}

	// The front's clock passes the expiry: refused, although nothing else
	// changed.
	fx.setClock(signedAt(t, valid).Add(time.Minute + time.Second))
	expired := fetch(t, valid)
	require.Equal(t, http.StatusForbidden, expired.status)
	require.Equal(t, "AccessDenied", expired.err.Code)
	require.Equal(t, "Request has expired", expired.err.Message)
	require.Equal(t, "60", expired.err.XAmzExpires)
}

// A URL that expires in one second is good up to that second and refused
// after it; one signed further ahead than the clock skew allows is not valid
// yet.
func TestPresignedURLValidityWindow(t *testing.T) {
	t.Parallel()
	fx := newPresignFixture(t, "front-presign-window", map[string]string{"a.csv": "a\n"})
	u := fx.presign(t, "local", "local", "a.csv", time.Second)
	at := signedAt(t, u)
	for _, tt := range []struct {
		now  time.Time
		want int
	}{
		{at, http.StatusOK},
		{at.Add(time.Second), http.StatusOK},
		{at.Add(time.Second + time.Millisecond), http.StatusForbidden},
		{at.Add(-presignClockSkew), http.StatusOK},
		{at.Add(-presignClockSkew - time.Second), http.StatusForbidden},
	} {
		fx.setClock(tt.now)
		got := fetch(t, u)
		require.Equal(t, tt.want, got.status, "at %s", tt.now.Sub(at))
		switch {
		case tt.want == http.StatusOK:
			require.Equal(t, "a\n", got.body)
		case tt.now.After(at):
			require.Equal(t, "Request has expired", got.err.Message)
		default:
			require.Equal(t, "Request is not yet valid", got.err.Message)
		}
	}
}
