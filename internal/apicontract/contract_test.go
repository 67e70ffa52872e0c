package apicontract_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/apicontract"
)

func load(t *testing.T) *apicontract.Contract {
	t.Helper()
	c, err := apicontract.Load()
	require.NoError(t, err, "api/openapi.yaml must parse and validate as OpenAPI 3.1")
	return c
}

func TestTheDocumentParses(t *testing.T) {
	c := load(t)
	require.Contains(t, c.Operations(), "POST /classes/{class_id}/enrollments")
	require.Contains(t, c.ErrorCodes(), "idempotency_key_required")
}

func TestParseRefusesDocumentsItCannotUse(t *testing.T) {
	for name, doc := range map[string]string{
		"OpenAPI 3.0":   "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n",
		"a broken $ref": "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      responses:\n        '200': {$ref: '#/components/responses/Missing'}\n",
		"not YAML":      "openapi: [3.1.0\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := apicontract.Parse([]byte(doc))
			require.Error(t, err)
		})
	}
}

const class = `{"class_id":"c-1","title":"Queues","capacity":20,"seats_taken":0,"seats_left":20,"starts_at":"2030-01-01T17:00:00Z","teacher_id":"t-1"}`

// TestCheck: the answers the document allows pass, and each kind of
// violation — a missing or unknown member, a wrong type, a code the status
// cannot carry, an undocumented status, a header the status requires —
// fails with a message naming the request and the status.
func TestCheck(t *testing.T) {
	c := load(t)
	jsonHeader := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		method string
		path   string
		status int
		header http.Header
		body   string
		ok     bool
	}{
		{"a class", "POST", "/classes", 201, jsonHeader(), class, true},
		{"a class without seats_left", "POST", "/classes", 201, jsonHeader(), strings.Replace(class, `"seats_left":20,`, "", 1), false},
		{"a class with a member the document does not have", "POST", "/classes", 201, jsonHeader(), strings.Replace(class, `{`, `{"secret":"x",`, 1), false},
		{"a class whose capacity is a string", "GET", "/classes/c-1", 200, jsonHeader(), strings.Replace(class, `"capacity":20`, `"capacity":"20"`, 1), false},
		{"a status the operation does not list", "GET", "/classes/c-1", 418, jsonHeader(), `{"error":{"code":"internal","message":"x"}}`, false},
		{"not found with its code", "GET", "/classes/nope", 404, jsonHeader(), `{"error":{"code":"class_not_found","message":"no such class"}}`, true},
		{"not found with a conflict's code", "GET", "/classes/nope", 404, jsonHeader(), `{"error":{"code":"class_full","message":"x"}}`, false},
		{"forbidden with its code (a 3.1 const)", "POST", "/classes", 403, jsonHeader(), `{"error":{"code":"forbidden","message":"x"}}`, true},
		{"forbidden with another code", "POST", "/classes", 403, jsonHeader(), `{"error":{"code":"not_found","message":"x"}}`, false},
		{"a roster never changed (a 3.1 type array with null)", "GET", "/classes/c-1/roster", 200, jsonHeader(), `{"class_id":"c-1","students":[],"as_of":null}`, true},
		{"a roster whose as_of is a number", "GET", "/classes/c-1/roster", 200, jsonHeader(), `{"class_id":"c-1","students":[],"as_of":5}`, false},
		{"a code no one knows", "POST", "/classes", 400, jsonHeader(), `{"error":{"code":"bad","message":"x"}}`, false},
		{"an error without a message", "POST", "/classes", 400, jsonHeader(), `{"error":{"code":"invalid_json"}}`, false},
		{"the gateway refusing a token", "GET", "/classes/c-1", 401, jsonHeader("WWW-Authenticate", "Bearer"), `{"message":"Unauthorized"}`, true},
		{"an export accepted with its Location", "POST", "/classes/c-1/exports", 202, jsonHeader("Location", "/operations/op-1"),
			`{"operation_id":"op-1","kind":"roster_export","status":"pending"}`, true},
		{"an export accepted without Location", "POST", "/classes/c-1/exports", 202, jsonHeader(),
			`{"operation_id":"op-1","kind":"roster_export","status":"pending"}`, false},
		{"contention with Retry-After", "POST", "/classes/c-1/enrollments", 429, jsonHeader("Retry-After", "1"),
			`{"error":{"code":"contention","message":"retry shortly"}}`, true},
		{"contention without Retry-After", "POST", "/classes/c-1/enrollments", 429, jsonHeader(),
			`{"error":{"code":"contention","message":"retry shortly"}}`, false},
		{"an unknown route", "GET", "/nowhere", 404, jsonHeader(), `{"error":{"code":"route_not_found","message":"no such route"}}`, true},
		{"an unknown route answered 200", "GET", "/nowhere", 200, jsonHeader(), `{}`, false},
		{"another method with Allow", "PATCH", "/classes", 405, jsonHeader("Allow", "POST"),
			`{"error":{"code":"method_not_allowed","message":"x"}}`, true},
		{"another method without Allow", "PATCH", "/classes", 405, jsonHeader(),
			`{"error":{"code":"method_not_allowed","message":"x"}}`, false},
		{"a body that is not JSON", "GET", "/healthz", 200, jsonHeader(), `ok`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:3000"+tt.path, nil)
			err := c.Check(context.Background(), req, tt.status, tt.header, []byte(tt.body))
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.path)
		})
	}
}

// TestTransport: a client whose transport checks the API's answers gets
// the violation as its error, the valid answers as they were, and answers
// of other hosts unchecked.
func TestTransport(t *testing.T) {
	c := load(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/classes/c-1":
			_, _ = io.WriteString(w, class)
		default: // a class without its teacher: not the document's Class
			_, _ = io.WriteString(w, strings.Replace(class, `,"teacher_id":"t-1"`, "", 1))
		}
	}))
	defer api.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "anything")
	}))
	defer other.Close()

	rt, err := c.Transport(api.URL, http.DefaultTransport)
	require.NoError(t, err)
	client := &http.Client{Transport: rt}
	before := c.Checked()

	resp, err := client.Get(api.URL + "/classes/c-1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.JSONEq(t, class, string(body), "a valid answer reaches the caller intact")

	_, err = client.Get(api.URL + "/classes/c-2")
	require.Error(t, err)
	t.Log(err)
	require.Contains(t, err.Error(), "teacher_id")
	require.Contains(t, err.Error(), "api/openapi.yaml")

	resp, err = client.Get(other.URL + "/classes/c-2")
	require.NoError(t, err, "another host's answers are not the API's")
	require.NoError(t, resp.Body.Close())

	require.EqualValues(t, 2, c.Checked()-before)
}
