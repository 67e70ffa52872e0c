package front

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Query-string authentication (presigned URLs), AWS Signature Version 4.
const (
	presignAlgorithm = "AWS4-HMAC-SHA256"
	amzAlgorithm     = "X-Amz-Algorithm"
	amzCredential    = "X-Amz-Credential"
	amzDate          = "X-Amz-Date"
	amzExpires       = "X-Amz-Expires"
	amzSignedHeaders = "X-Amz-SignedHeaders"
	amzSignature     = "X-Amz-Signature"
	amzSecurityToken = "X-Amz-Security-Token"
	amzDateFormat    = "20060102T150405Z"
	// maxPresignExpires is the longest validity AWS accepts: a week.
	maxPresignExpires = 604800
	// presignClockSkew is how far ahead of the server's clock X-Amz-Date may
	// be, as for every signed AWS request.
	presignClockSkew = 15 * time.Minute
	// unsignedPayload is the payload hash S3 presigned URLs are signed with.
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

// presignParams are the query parameters that carry the authentication; the
// front removes them before kumo sees the request, so that the front's check
// (and its clock) is the only one.
var presignParams = []string{amzAlgorithm, amzCredential, amzDate, amzExpires, amzSignedHeaders, amzSignature, amzSecurityToken}

// isPresigned reports whether r authenticates with its query string.
func isPresigned(r *http.Request) bool {
	return r.URL.Query().Get(amzAlgorithm) == presignAlgorithm
}

// presignVerifier checks presigned requests as AWS does: the parameters are
// well formed, the access key is one the local cloud handed out, the
// signature recomputed with its secret key (by the SDK's own signer) matches,
// and the request is inside its validity window on the front's clock.
type presignVerifier struct {
	keys   map[string]string // access key id → secret access key
	now    func() time.Time
	signer *v4.Signer
}

// credentialScope is the parsed X-Amz-Credential:
// AKID/yyyymmdd/region/service/aws4_request.
type credentialScope struct {
	accessKey, day, region, service string
}

func parseCredential(s string) (credentialScope, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" || parts[0] == "" || parts[2] == "" || parts[3] == "" {
		return credentialScope{}, false
	}
	if _, err := time.Parse("20060102", parts[1]); err != nil {
		return credentialScope{}, false
	}
	return credentialScope{accessKey: parts[0], day: parts[1], region: parts[2], service: parts[3]}, true
}

// verify returns nil when r may proceed, or the error AWS would answer.
func (p presignVerifier) verify(r *http.Request) *s3Error {
	q := r.URL.Query()
	for _, k := range []string{amzCredential, amzDate, amzExpires, amzSignedHeaders, amzSignature} {
		if q.Get(k) == "" {
			return authQueryError("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, " +
				"X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	scope, ok := parseCredential(q.Get(amzCredential))
	if !ok {
		return authQueryError("Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; " +
			`expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	signedAt, err := time.Parse(amzDateFormat, q.Get(amzDate))
	if err != nil {
		return authQueryError(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`)
	}
	expires, err := strconv.Atoi(q.Get(amzExpires))
	switch {
	case err != nil || expires < 1:
		return authQueryError("X-Amz-Expires must be a whole number of seconds, at least 1")
	case expires > maxPresignExpires:
		return authQueryError("X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}

	secret, ok := p.keys[scope.accessKey]
	if !ok {
		return &s3Error{Status: http.StatusForbidden, Code: "InvalidAccessKeyId",
			Message: "The AWS Access Key Id you provided does not exist in our records.", AWSAccessKeyID: scope.accessKey}
	}
	want, err := p.signature(r, q, scope, secret, signedAt)
	if err != nil || !hmac.Equal([]byte(want), []byte(q.Get(amzSignature))) {
		return &s3Error{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
			Message:        "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
			AWSAccessKeyID: scope.accessKey, SignatureProvided: q.Get(amzSignature)}
	}

	now := p.now().UTC()
	expiresAt := signedAt.Add(time.Duration(expires) * time.Second)
	switch {
	case now.After(expiresAt):
		return &s3Error{Status: http.StatusForbidden, Code: "AccessDenied", Message: "Request has expired",
			XAmzExpires: strconv.Itoa(expires), Expires: expiresAt.Format(time.RFC3339), ServerTime: now.Format(time.RFC3339)}
	case signedAt.After(now.Add(presignClockSkew)):
		return &s3Error{Status: http.StatusForbidden, Code: "AccessDenied", Message: "Request is not yet valid",
			ServerTime: now.Format(time.RFC3339)}
	}
	return nil
}

// signature recomputes the request's X-Amz-Signature with secret: the
// request as received (method, path exactly as sent, query without the
// signature, the headers it says it signed), presigned by the SDK's signer
// at the time it names.
func (p presignVerifier) signature(r *http.Request, q url.Values, scope credentialScope, secret string, signedAt time.Time) (string, error) {
	query := url.Values{}
	for k, v := range q {
		if k != amzSignature {
			query[k] = v
		}
	}
	path := r.URL.EscapedPath()
	if strings.HasPrefix(r.RequestURI, "/") {
		path, _, _ = strings.Cut(r.RequestURI, "?")
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+r.Host+"/", nil)
	if err != nil {
		return "", err
	}
	// Opaque keeps the path byte for byte: the signer must not re-escape it.
	req.URL.Opaque = "//" + r.Host + path
	req.URL.RawQuery = query.Encode()
	req.Host = r.Host
	for _, h := range strings.Split(q.Get(amzSignedHeaders), ";") {
		switch h = strings.ToLower(strings.TrimSpace(h)); h {
		case "", "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[textproto.CanonicalMIMEHeaderKey(h)] = r.Header.Values(h)
		}
	}
	payload, err := payloadHash(r, scope.service)
	if err != nil {
		return "", err
	}
	creds := aws.Credentials{AccessKeyID: scope.accessKey, SecretAccessKey: secret, SessionToken: q.Get(amzSecurityToken)}
	signed, _, err := p.signer.PresignHTTP(context.Background(), creds, req, payload, scope.service, scope.region, signedAt,
		func(o *v4.SignerOptions) {
			o.DisableHeaderHoisting = true // the headers above are exactly those signed
			o.DisableURIPathEscaping = scope.service == "s3"
		})
	if err != nil {
		return "", err
	}
	u, err := url.Parse(signed)
	if err != nil {
		return "", err
	}
	return u.Query().Get(amzSignature), nil
}

// payloadHash is what the signer hashes for the body: S3 presigned URLs
// leave it unsigned; other services sign its SHA-256 (the body is read and
// restored).
func payloadHash(r *http.Request, service string) (string, error) {
	if service == "s3" {
		return unsignedPayload, nil
	}
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return "", err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), nil
}

// withoutPresignParams returns r with the authentication parameters removed
// from its query, for kumo.
func withoutPresignParams(r *http.Request) *http.Request {
	q := r.URL.Query()
	for _, k := range presignParams {
		q.Del(k)
	}
	out := r.Clone(r.Context())
	out.URL.RawQuery = q.Encode()
	out.RequestURI = ""
	return out
}

// s3Error is S3's XML error document.
type s3Error struct {
	XMLName           xml.Name `xml:"Error"`
	Status            int      `xml:"-"`
	Code              string   `xml:"Code"`
	Message           string   `xml:"Message"`
	AWSAccessKeyID    string   `xml:"AWSAccessKeyId,omitempty"`
	SignatureProvided string   `xml:"SignatureProvided,omitempty"`
	XAmzExpires       string   `xml:"X-Amz-Expires,omitempty"`
	Expires           string   `xml:"Expires,omitempty"`
	ServerTime        string   `xml:"ServerTime,omitempty"`
	RequestID         string   `xml:"RequestId"`
}

func authQueryError(message string) *s3Error {
	return &s3Error{Status: http.StatusBadRequest, Code: "AuthorizationQueryParametersError", Message: message}
}

func (e *s3Error) write(w http.ResponseWriter) {
	e.RequestID = newRequestID()
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("X-Amz-Request-Id", e.RequestID)
	w.WriteHeader(e.Status)
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(e)
}
