package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Client is an aws.HTTPClient that hands the transport request bodies that
// only read (see the package doc).
type Client struct {
	next aws.HTTPClient
}

var _ aws.HTTPClient = (*Client)(nil)

// New returns the SDK's default HTTP client, mended.
func New() *Client { return Wrap(awshttp.NewBuildableClient()) }

// Wrap mends next, an SDK HTTP client configured as the caller needs.
func Wrap(next aws.HTTPClient) *Client { return &Client{next: next} }

// Do sends req with its body behind a type that only reads.
func (c *Client) Do(req *http.Request) (*http.Response, error) { return c.next.Do(mend(req)) }

// mend returns req with its body behind readOnlyBody: a shallow copy, as
// WithContext makes, so that the caller's request is left as it was.
func mend(req *http.Request) *http.Request {
	if Unmended || req.Body == nil || req.Body == http.NoBody {
		return req
	}
	r := *req
	r.Body = readOnlyBody{req.Body}
	return &r
}

// readOnlyBody hides every method of a body but Read and Close: in
// particular WriteTo, which net/http's transport would otherwise call.
type readOnlyBody struct{ rc io.ReadCloser }

func (b readOnlyBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b readOnlyBody) Close() error               { return b.rc.Close() }

// Transport mends an http.RoundTripper the same way, for a proxy that
// forwards bodies it did not make.
func Transport(base http.RoundTripper) http.RoundTripper { return transport{base} }

type transport struct{ base http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(mend(req))
}

// Mend gives cfg the mended client, over the client the configuration
// already has (the SDK's default if none). A program calls it right after
// config.LoadDefaultConfig, not through config.WithHTTPClient: the loader
// adds a custom CA bundle (AWS_CA_BUNDLE) only to the SDK's own client type
// and refuses any other.
func Mend(cfg *aws.Config) {
	switch cfg.HTTPClient.(type) {
	case *Client:
	case nil:
		cfg.HTTPClient = New()
	default:
		cfg.HTTPClient = Wrap(cfg.HTTPClient)
	}
}
