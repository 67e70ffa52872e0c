package console

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Personal data on the page is masked: a dead letter's body and attributes
// carry e-mail addresses and names, which an operator deciding a redrive
// does not need to read. Ids stay: they are what the operator searches by.

// personalKeys are the JSON keys whose string values are personal data.
var personalKeys = []string{"email", "name", "phone", "address", "to", "recipient"}

func personalKey(k string) bool {
	k = strings.ToLower(k)
	for _, p := range personalKeys {
		if k == p || strings.HasSuffix(k, "_"+p) || strings.HasSuffix(k, p+"_address") {
			return true
		}
	}
	return false
}

var emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)

// MaskText masks the personal data in s: in a JSON document, the values of
// personal keys (email, display_name, phone, ...); anywhere, e-mail
// addresses. The shape stays readable: "s***@example.com", "A***".
func MaskText(s string) string {
	var doc any
	if json.Unmarshal([]byte(s), &doc) == nil {
		if _, isObj := doc.(map[string]any); isObj {
			if out, err := json.Marshal(maskValue("", doc)); err == nil {
				return string(out)
			}
		}
	}
	return maskEmails(s)
}

// MaskAttributes masks the values of personal attributes and any e-mail
// address in the others.
func MaskAttributes(attrs map[string]string) map[string]string {
	if attrs == nil {
		return nil
	}
	out := make(map[string]string, len(attrs))
	for k, v := range attrs {
		out[k] = maskValue(k, v).(string)
	}
	return out
}

// MaskMap masks a decoded JSON object (or DynamoDB item) in place and
// returns it.
func MaskMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return maskValue("", m).(map[string]any)
}

func maskValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = maskValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = maskValue(key, e)
		}
		return x
	case string:
		if strings.HasPrefix(x, "{") { // a JSON document inside, like an event's payload
			if masked := MaskText(x); masked != x {
				return masked
			}
		}
		if personalKey(key) {
			if emailPattern.MatchString(x) {
				return maskEmails(x)
			}
			return maskWord(x)
		}
		return maskEmails(x)
	default:
		return v
	}
}

func maskEmails(s string) string {
	return emailPattern.ReplaceAllStringFunc(s, func(addr string) string {
		local, domain, _ := strings.Cut(addr, "@")
		return maskWord(local) + "@" + domain
	})
}

func maskWord(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	return string(r[0]) + "***"
}
