package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/clubdev/club/internal/webhooksig"
)

// FuzzAPI throws arbitrary methods, paths, headers, bodies and claims at the
// handler and checks the promise of docs/principles.md §9: no input yields a 5xx, and every
// error is a JSON body with a non-empty error.code. The seed corpus
// (testdata/fuzz/FuzzAPI) covers every route; "{class}", "{enrollment}",
// "{intensive}", "{purchase}" and "{operation}" in a path or body are
// replaced by ids that exist, and "{signature}" in a header by a valid payment-provider signature
// of the body, so mutations reach the domain.
// Plain `go test` runs the seeds; `go test -fuzz FuzzAPI` explores.
func FuzzAPI(f *testing.F) {
	fx := setup(f) // one store for the whole run; state accumulates
	ctx := context.Background()
	classID := fx.createClass(teacher, 100)
	enrollmentID := fx.enroll(student, classID, "fuzz-key-0001").str("enrollment_id")
	intensiveID := fx.createIntensive(teacher, 100, 60)
	purchaseID := fx.buy(student, intensiveID, "fuzz-key-0001").str("purchase_id")
	operationID := fx.export(teacher, classID).str("operation_id")
	ids := strings.NewReplacer("{class}", classID, "{enrollment}", enrollmentID, "{intensive}", intensiveID,
		"{purchase}", purchaseID, "{operation}", operationID)

	f.Fuzz(func(t *testing.T, method, path, headers string, body []byte, who uint8, groups, email string, b64 bool) {
		body = []byte(ids.Replace(string(body)))
		headers = strings.ReplaceAll(headers, "{signature}", webhooksig.Sign(webhookSecret, time.Now(), body))
		path, query, _ := strings.Cut(ids.Replace(path), "?")
		ev := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: query,
			Headers: parseHeaders(headers),
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RequestID: "fuzz",
				HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			},
		}
		if b64 {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		} else {
			ev.Body = string(body)
		}
		if c, ok := fuzzCaller(who, groups, email); ok {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: c.claims()},
			}
		}

		resp, err := fx.h.Handle(ctx, ev)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		if resp.StatusCode < 200 || resp.StatusCode >= 500 {
			t.Fatalf("%q %q: status %d: %s", method, ev.RawPath, resp.StatusCode, resp.Body)
		}
		var doc struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &doc); err != nil {
			t.Fatalf("%q %q: status %d: body is not JSON: %q", method, ev.RawPath, resp.StatusCode, resp.Body)
		}
		if resp.StatusCode >= 400 && (doc.Error == nil || doc.Error.Code == "" || doc.Error.Message == "") {
			t.Fatalf("%q %q: status %d without an error code and message: %s", method, ev.RawPath, resp.StatusCode, resp.Body)
		}
		if resp.StatusCode < 400 && doc.Error != nil {
			t.Fatalf("%q %q: status %d with an error body: %s", method, ev.RawPath, resp.StatusCode, resp.Body)
		}
		checkContract(t, ev, resp)
	})
}

// fuzzCaller picks the claims: none, one of the test users, or made-up
// claims with the fuzzed groups and e-mail.
func fuzzCaller(who uint8, groups, email string) (caller, bool) {
	known := []caller{teacher, otherTeacher, student, otherStudent, operator, stranger}
	switch n := int(who) % (len(known) + 2); {
	case n < len(known):
		return known[n], true
	case n == len(known):
		return caller{sub: "fuzz-user", groups: groups, email: email}, true
	default:
		return caller{}, false
	}
}

// parseHeaders reads "Name: value" lines.
func parseHeaders(s string) map[string]string {
	h := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if name, value, ok := strings.Cut(line, ":"); ok {
			h[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
		}
	}
	return h
}
