package securitytest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/clubdev/club/internal/obs"
)

// personalKey matches member names that announce personal data: e-mail
// addresses, names, phone numbers, postal addresses, birth dates.
var personalKey = regexp.MustCompile(`(?i)(^|[_.\-])(e-?mail|mail_?to|name|first_?name|last_?name|full_?name|display_?name|surname|phone|address|birth_?date|dob)($|[_.\-])`)

// PersonalData lists where a JSON document carries personal data: a member
// whose name announces it (email, display_name, phone, ...) or a string
// value that holds an e-mail address. Each entry is a path such as
// "data.email" with the reason; nil means none. Ids (student_id, ...) are
// not personal data in this sense: they identify a user only to someone who
// can read the user's profile.
func PersonalData(doc []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	var out []string
	walkJSON("", v, func(path, key string, value any) {
		if key != "" && personalKey.MatchString(key) {
			out = append(out, path+": member name announces personal data")
		}
		if s, ok := value.(string); ok && obs.ContainsEmail(s) {
			out = append(out, path+": value holds an e-mail address")
		}
	})
	return out, nil
}

func walkJSON(path string, v any, visit func(path, key string, value any)) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			visit(p, k, x[k])
			walkJSON(p, x[k], visit)
		}
	case []any:
		for i, e := range x {
			p := fmt.Sprintf("%s[%d]", path, i)
			visit(p, "", e)
			walkJSON(p, e, visit)
		}
	}
}
