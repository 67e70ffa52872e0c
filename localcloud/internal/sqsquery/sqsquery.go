package sqsquery

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
)

const (
	formContentType = "application/x-www-form-urlencoded"
	jsonContentType = "application/x-amz-json-1.0"
	targetPrefix    = "AmazonSQS."

	// maxFormBytes bounds the form read into memory. SQS takes at most 1 MiB
	// of message data per call; form encoding can triple that.
	maxFormBytes = 8 << 20
)

// New returns a handler that serves SQS Query-protocol calls by translating
// them to the JSON protocol for next, and passes every other request to next
// unchanged. See the package documentation for which requests are translated.
func New(next http.Handler) http.Handler {
	return &translator{next: next}
}

type translator struct {
	next http.Handler
}

func (t *translator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := parseCall(r)
	var qe *queryError
	switch {
	case errors.As(err, &qe):
		writeError(w, qe, newRequestID())
	case err != nil:
		writeError(w, &queryError{status: http.StatusBadRequest, code: "MalformedQueryString", message: err.Error()}, newRequestID())
	case c == nil:
		t.next.ServeHTTP(w, r)
	default:
		t.serve(w, r, c)
	}
}

// call is a recognised SQS Query-protocol call.
type call struct {
	action string
	form   url.Values
}

// serve forwards c to next as a JSON-protocol call and answers in XML.
func (t *translator) serve(w http.ResponseWriter, r *http.Request, c *call) {
	body, err := formToJSON(c.action, c.form)
	if err != nil {
		var qe *queryError
		if !errors.As(err, &qe) {
			qe = &queryError{status: http.StatusInternalServerError, code: "InternalFailure", message: err.Error()}
		}
		writeError(w, qe, newRequestID())
		return
	}

	out := r.Clone(r.Context())
	out.Method = http.MethodPost
	out.URL.Path, out.URL.RawPath, out.URL.RawQuery = "/", "", ""
	out.RequestURI = "/"
	out.Header.Set("Content-Type", jsonContentType)
	out.Header.Set("X-Amz-Target", targetPrefix+c.action)
	// The response is read here, so it must not arrive compressed at the
	// client's request; a transport in next may still negotiate its own.
	out.Header.Del("Accept-Encoding")
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }

	res := &bufferedResponse{header: make(http.Header)}
	t.next.ServeHTTP(res, out)

	requestID := res.header.Get("X-Amzn-Requestid")
	if requestID == "" {
		requestID = newRequestID()
	}
	if res.statusCode() >= 300 {
		writeError(w, errorFromJSON(res.statusCode(), res.header, res.body.Bytes()), requestID)
		return
	}
	doc, err := renderResult(c.action, requestID, res.body.Bytes())
	if err != nil {
		writeError(w, &queryError{status: http.StatusInternalServerError, code: "InternalFailure", message: err.Error()}, requestID)
		return
	}
	writeXML(w, http.StatusOK, requestID, doc)
}

// credentialScopeRE takes the service out of a SigV4 credential:
// "AKID/20260101/us-east-1/sqs/aws4_request".
var credentialScopeRE = regexp.MustCompile(`(?:^|Credential=)[^/,\s]+/\d{8}/[^/]+/([^/]+)/aws4_request`)

// queuePathRE matches the path of a queue URL: /<account>/<queue name>.
var queuePathRE = regexp.MustCompile(`^/\d{12}/[A-Za-z0-9_-]{1,80}(?:\.fifo)?$`)

// parseCall recognises an SQS Query-protocol call. It returns nil, nil for a
// request that is not one, after restoring any body it read.
func parseCall(r *http.Request) (*call, error) {
	signed, onQueuePath, ok := sqsCandidate(r)
	if !ok {
		return nil, nil
	}
	form, body, err := readForm(r)
	if err != nil {
		if signed {
			return nil, err
		}
		restoreBody(r, body) // not ours to judge
		return nil, nil
	}
	name := form.Get("Action")
	a, known := actions[name]
	if name == "" || (!signed && !known) {
		restoreBody(r, body)
		return nil, nil
	}
	if _, ok := form["QueueUrl"]; !ok && onQueuePath && a.takesQueueURL() {
		// Older clients post to the queue URL instead of naming it.
		form.Set("QueueUrl", requestScheme(r)+"://"+r.Host+r.URL.Path)
	}
	return &call{action: name, form: form}, nil
}

// sqsCandidate reports whether r may be an SQS Query call, before its body
// is read: a form POST or a GET with a query, without X-Amz-Target, and
// either signed for SQS or unsigned and sent to a queue URL.
func sqsCandidate(r *http.Request) (signed, onQueuePath, ok bool) {
	if r.Header.Get("X-Amz-Target") != "" {
		return false, false, false
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isForm := r.Method == http.MethodPost && mediaType == formContentType
	isGet := r.Method == http.MethodGet && r.URL.RawQuery != ""
	if !isForm && !isGet {
		return false, false, false
	}
	service := signedService(r.Header.Get("Authorization"), r.URL.Query().Get("X-Amz-Credential"))
	onQueuePath = queuePathRE.MatchString(r.URL.Path)
	return service == "sqs", onQueuePath, service == "sqs" || (service == "" && onQueuePath)
}

// readForm reads the parameters of r: the form in a POST body, then those
// in the URL, as r.ParseForm would. body is what it read of r.Body, for
// restoreBody.
func readForm(r *http.Request) (form url.Values, body []byte, err error) {
	form = make(url.Values)
	if r.Method == http.MethodPost {
		if body, err = peekBody(r); err != nil {
			return nil, body, err
		}
		if len(body) > maxFormBytes {
			return nil, body, &queryError{
				status:  http.StatusRequestEntityTooLarge,
				code:    "RequestEntityTooLarge",
				message: "the request body is larger than " + strconv.Itoa(maxFormBytes) + " bytes",
			}
		}
		if form, err = url.ParseQuery(string(body)); err != nil {
			return nil, body, fmt.Errorf("read the form: %w", err)
		}
	}
	for key, values := range r.URL.Query() {
		form[key] = append(form[key], values...)
	}
	return form, body, nil
}

// restoreBody puts back what readForm read, ahead of the unread rest.
func restoreBody(r *http.Request, read []byte) {
	if read == nil {
		return
	}
	r.Body = &replayedBody{Reader: io.MultiReader(bytes.NewReader(read), r.Body), Closer: r.Body}
}

// signedService returns the service named in the SigV4 credential scope of
// the Authorization header or of a presigned URL, or "" if unsigned.
func signedService(authorization, presignedCredential string) string {
	for _, s := range []string{authorization, presignedCredential} {
		if m := credentialScopeRE.FindStringSubmatch(s); m != nil {
			return m[1]
		}
	}
	return ""
}

// peekBody reads up to one byte more than maxFormBytes of the body, leaving
// the rest unread in r.Body.
func peekBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	return body, nil
}

// replayedBody gives the next handler the bytes already read followed by the
// unread rest, and closes the original body.
type replayedBody struct {
	io.Reader
	io.Closer
}

func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// bufferedResponse keeps the next handler's whole response for translation.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Flush lets a streaming handler (a reverse proxy with FlushInterval -1)
// flush; everything is sent once translated.
func (b *bufferedResponse) Flush() {}

func (b *bufferedResponse) statusCode() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}

func writeError(w http.ResponseWriter, e *queryError, requestID string) {
	writeXML(w, e.status, requestID, renderError(e, requestID))
}

func writeXML(w http.ResponseWriter, status int, requestID string, doc []byte) {
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(status)
	_, _ = w.Write(doc) // a client gone away is not an error of ours
}

// newRequestID makes a request ID in the UUID form AWS uses, for answers the
// backend did not give one for.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
