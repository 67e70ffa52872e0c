package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/aws/aws-lambda-go/events"
)

// MaxBodyBytes is the largest request body accepted (64 KiB): far above any
// valid request, small enough that a hostile one costs nothing.
const MaxBodyBytes = 64 << 10

var errPayloadTooLarge = &httpError{
	status: http.StatusRequestEntityTooLarge, code: CodePayloadTooLarge,
	message: fmt.Sprintf("the request body must not exceed %d bytes", MaxBodyBytes),
}

// requestBody returns the body's bytes, decoding base64 (API Gateway encodes
// bodies that are not text) and enforcing MaxBodyBytes.
func requestBody(ev *events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !ev.IsBase64Encoded {
		if len(ev.Body) > MaxBodyBytes {
			return nil, errPayloadTooLarge
		}
		return []byte(ev.Body), nil
	}
	// Refuse before decoding what cannot fit anyway.
	if base64.StdEncoding.DecodedLen(len(ev.Body)) > MaxBodyBytes+2 {
		return nil, errPayloadTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	if err != nil {
		return nil, invalidJSON("the body is marked base64 but is not valid base64")
	}
	if len(b) > MaxBodyBytes {
		return nil, errPayloadTooLarge
	}
	return b, nil
}

// field is one member a request object may have.
type field struct {
	name string
	dst  any    // a pointer to decode the member's value into
	kind string // what the value must be, for messages: "a string", "an integer"
}

// decodeObject reads body as a JSON object whose members are all among
// fields, strictly: invalid JSON is invalid_json; a body that is not an
// object, a member not in fields, a member given twice, or a value of the
// wrong type is validation_failed naming the member. An empty body is the
// empty object. A null value leaves its destination unset, so a required
// member that is null is reported by the domain's validation as missing.
func decodeObject(body []byte, fields ...field) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !json.Valid(body) {
		return invalidJSON("the body is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return invalidField("body", "must be a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalidJSON("the body is not valid JSON")
		}
		name, _ := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return invalidJSON("the body is not valid JSON")
		}
		name = clip(name) // it is echoed back; a hostile key may be huge
		i := indexOf(fields, name)
		switch {
		case i < 0:
			return invalidField(name, "is not a known field")
		case seen[name]:
			return invalidField(name, "is given more than once")
		}
		seen[name] = true
		if err := json.Unmarshal(raw, fields[i].dst); err != nil {
			return invalidField(name, "must be "+fields[i].kind)
		}
	}
	return nil
}

func indexOf(fields []field, name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// clip shortens client-supplied text that an error message repeats.
func clip(s string) string {
	const maxLen = 64
	if r := []rune(s); len(r) > maxLen {
		return string(r[:maxLen]) + "…"
	}
	return s
}

// checkText refuses control characters and bidirectional overrides in text
// that other people read (a class title, a display name): a newline or an
// escape sequence in a title is never intended, and a right-to-left override
// can make one name look like another. Surrounding white space is not
// checked: the domain trims it.
func checkText(name, s string) error {
	if strings.IndexFunc(strings.TrimSpace(s), func(r rune) bool { return unicode.IsControl(r) || isBidiControl(r) }) >= 0 {
		return invalidField(name, "must not contain control characters")
	}
	return nil
}

func isBidiControl(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || ('\u202a' <= r && r <= '\u202e') || ('\u2066' <= r && r <= '\u2069')
}
