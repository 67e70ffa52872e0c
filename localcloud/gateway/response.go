package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// functionResponse is the HTTP response a function asked for.
type functionResponse struct {
	status int
	header http.Header
	body   []byte
}

// structuredResponse is the format 2.0 response document. multiValueHeaders
// belongs to format 1.0 but is honoured too, as it is by
// events.APIGatewayV2HTTPResponse.
type structuredResponse struct {
	StatusCode        int                 `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Cookies           []string            `json:"cookies"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// headers the function may not set: the server owns framing and the id.
var reservedHeaders = map[string]bool{
	"Content-Length":    true,
	"Transfer-Encoding": true,
	"Connection":        true,
	"Apigw-Requestid":   true,
}

// translateResponse interprets a successful function's payload as format 2.0
// does. A JSON object with a statusCode is the structured form. Any other
// valid JSON is taken as the body of a 200 application/json response (API
// Gateway's documented inference). Anything else is an error, which the
// caller turns into a 500.
func translateResponse(payload []byte) (*functionResponse, error) {
	trimmed := bytes.TrimSpace(payload)
	if !json.Valid(trimmed) {
		return nil, errors.New("function response is not valid JSON")
	}
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &fields); err != nil {
			return nil, fmt.Errorf("decode function response: %w", err)
		}
		if _, ok := fields["statusCode"]; ok {
			return structured(trimmed)
		}
	}
	return &functionResponse{
		status: http.StatusOK,
		header: http.Header{"Content-Type": {"application/json"}},
		body:   payload,
	}, nil
}

func structured(doc []byte) (*functionResponse, error) {
	var sr structuredResponse
	if err := json.Unmarshal(doc, &sr); err != nil {
		return nil, fmt.Errorf("decode structured function response: %w", err)
	}
	if sr.StatusCode < 100 || sr.StatusCode > 599 {
		return nil, fmt.Errorf("function response has invalid statusCode %d", sr.StatusCode)
	}
	resp := &functionResponse{status: sr.StatusCode, header: http.Header{}}
	for name, value := range sr.Headers {
		resp.header.Set(name, value)
	}
	// A header in multiValueHeaders replaces the same header in headers.
	for name, values := range sr.MultiValueHeaders {
		resp.header.Del(name)
		for _, v := range values {
			resp.header.Add(name, v)
		}
	}
	for name := range resp.header {
		if reservedHeaders[name] {
			resp.header.Del(name)
		}
	}
	for _, c := range sr.Cookies {
		resp.header.Add("Set-Cookie", c)
	}
	if sr.IsBase64Encoded {
		body, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sr.Body))
		if err != nil {
			return nil, fmt.Errorf("function response body is not valid base64: %w", err)
		}
		resp.body = body
	} else {
		resp.body = []byte(sr.Body)
	}
	return resp, nil
}
