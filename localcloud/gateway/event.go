package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

const accountID = "000000000000"

// newRequestID returns an id shaped like API Gateway's ("Mc7UVioPPHcEKPA=").
func newRequestID() string {
	b := make([]byte, 11)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.StdEncoding.EncodeToString(b)
}

// buildEvent renders a request in the Lambda payload format 2.0.
func buildEvent(r *http.Request, rt *route, params map[string]string, body []byte, tok *verifiedToken, apiID, requestID string, received time.Time) events.APIGatewayV2HTTPRequest {
	headers, cookies := eventHeaders(r)
	host := hostOnly(r.Host)
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              rt.key,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: queryParameters(r.URL.RawQuery),
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     rt.key,
			AccountID:    accountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        apiID,
			DomainName:   r.Host,
			DomainPrefix: domainPrefix(host),
			Time:         received.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    received.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP(r),
				UserAgent: r.UserAgent(),
			},
		},
	}
	if tok != nil {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: claimStrings(tok.claims),
				Scopes: tok.scopes,
			},
		}
	}
	if len(body) > 0 {
		if isTextBody(r.Header.Get("Content-Type"), body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// eventHeaders lower-cases header names and joins repeated headers with
// commas, as format 2.0 does. Cookie headers move to the cookies list, one
// entry per cookie. Go keeps Host apart from the header map; it is put back.
func eventHeaders(r *http.Request) (map[string]string, []string) {
	headers := make(map[string]string, len(r.Header)+4)
	var cookies []string
	for name, values := range r.Header {
		lower := strings.ToLower(name)
		if lower == "cookie" {
			for _, v := range values {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lower] = strings.Join(values, ",")
	}
	headers["host"] = r.Host
	if r.ContentLength > 0 {
		headers["content-length"] = fmt.Sprint(r.ContentLength)
	}
	// What API Gateway's load balancer adds.
	ip := sourceIP(r)
	if prior := headers["x-forwarded-for"]; prior != "" {
		headers["x-forwarded-for"] = prior + ", " + ip
	} else {
		headers["x-forwarded-for"] = ip
	}
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		headers["x-forwarded-port"] = port
	}
	headers["x-forwarded-proto"] = "http"
	return headers, cookies
}

// queryParameters decodes the query string, joining repeated keys with
// commas in their order of appearance; nil when there is none.
func queryParameters(raw string) map[string]string {
	if raw == "" {
		return nil
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			value = v
		}
		if prev, ok := out[key]; ok {
			out[key] = prev + "," + value
		} else {
			out[key] = value
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// claimStrings renders every claim as a string, as API Gateway does for
// requestContext.authorizer.jwt.claims: strings stay as they are, numbers
// keep their JSON text ("1700000000", not "1.7e+09"), and lists and objects
// take Go's fmt form, which is what API Gateway emits for lists
// ("cognito:groups": "[student teacher]").
func claimStrings(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// isTextBody reports whether a body is passed as text rather than base64:
// it must be valid UTF-8 and either untyped or of a textual media type.
func isTextBody(contentType string, body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return true
	}
	return slices.Contains([]string{"application/json", "application/xml", "application/javascript", "application/graphql"}, mt)
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// domainPrefix is the first label of the host name, as API Gateway reports
// it ("abc123" for abc123.execute-api...); an IP address is kept whole.
func domainPrefix(host string) string {
	if net.ParseIP(host) != nil {
		return host
	}
	prefix, _, _ := strings.Cut(host, ".")
	return prefix
}

func sourceIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// wireEvent marshals an event as API Gateway sends it. aws-lambda-go's type
// always renders requestContext.authentication, as an empty client
// certificate; API Gateway omits it unless mutual TLS is on, so the shallower
// fields below shadow it (encoding/json prefers the least nested field).
type wireEvent struct {
	events.APIGatewayV2HTTPRequest
	RequestContext wireContext `json:"requestContext"`
}

type wireContext struct {
	events.APIGatewayV2HTTPRequestContext
	Authentication *events.APIGatewayV2HTTPRequestContextAuthentication `json:"authentication,omitempty"`
}

func marshalEvent(ev events.APIGatewayV2HTTPRequest) ([]byte, error) {
	return json.Marshal(wireEvent{
		APIGatewayV2HTTPRequest: ev,
		RequestContext:          wireContext{APIGatewayV2HTTPRequestContext: ev.RequestContext},
	})
}
