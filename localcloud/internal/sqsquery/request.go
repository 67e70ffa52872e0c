package sqsquery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// formToJSON builds the JSON-protocol body of a Query-protocol call. It
// returns a *queryError, which the caller sends as is, when a parameter
// cannot be read.
func formToJSON(name string, form url.Values) ([]byte, error) {
	var doc map[string]any
	if a, ok := actions[name]; ok {
		var err error
		if doc, err = decodeStruct(form, a.params, ""); err != nil {
			return nil, err
		}
	} else {
		doc = unindexedStrings(form)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", name, err)
	}
	return body, nil
}

// decodeStruct reads the members of a structure from form, whose keys are
// relative to the structure. path is the structure's own key prefix, for
// error messages.
func decodeStruct(form url.Values, params []param, path string) (map[string]any, error) {
	out := make(map[string]any, len(params))
	for _, p := range params {
		v, ok, err := p.decode(form, path)
		if err != nil {
			return nil, err
		}
		if ok {
			out[p.json] = v
		}
	}
	return out, nil
}

// decode reads one parameter; ok is false when the form does not carry it.
func (p param) decode(form url.Values, path string) (v any, ok bool, err error) {
	switch p.kind {
	case kindString:
		s, ok := first(form, p.query)
		return s, ok, nil
	case kindInt:
		s, ok := first(form, p.query)
		if !ok {
			return nil, false, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, false, invalidValue(path+p.query, s, "must be an integer")
		}
		return n, true, nil
	case kindList:
		groups := indexed(form, p.query)
		if len(groups) == 0 {
			return nil, false, nil
		}
		values := make([]string, 0, len(groups))
		for _, g := range groups {
			if s, ok := first(g.values, ""); ok {
				values = append(values, s)
			}
		}
		return values, true, nil
	case kindMap:
		return p.decodeMap(form, path)
	case kindEntries:
		groups := indexed(form, p.query)
		if len(groups) == 0 {
			return nil, false, nil
		}
		items := make([]any, 0, len(groups))
		for _, g := range groups {
			entry, err := decodeStruct(g.values, p.members, g.path(path, p.query))
			if err != nil {
				return nil, false, err
			}
			items = append(items, entry)
		}
		return items, true, nil
	}
	return nil, false, fmt.Errorf("parameter %s has unknown kind %d", p.query, p.kind)
}

// decodeMap reads a flattened map: Name.N.<mapKey> with Name.N.Value, or
// Name.N.Value.<member> when the values are structures.
func (p param) decodeMap(form url.Values, path string) (any, bool, error) {
	groups := indexed(form, p.query)
	if len(groups) == 0 {
		return nil, false, nil
	}
	out := make(map[string]any, len(groups))
	for _, g := range groups {
		entryPath := g.path(path, p.query)
		key, ok := first(g.values, p.mapKey)
		if !ok {
			return nil, false, missingParameter(entryPath + p.mapKey)
		}
		if p.members == nil {
			value, _ := first(g.values, "Value")
			out[key] = value
			continue
		}
		value, err := decodeStruct(within(g.values, "Value"), p.members, entryPath+"Value.")
		if err != nil {
			return nil, false, err
		}
		out[key] = value
	}
	return out, true, nil
}

// group is the part of a form under one index of a flattened collection:
// for prefix "Attribute", the keys "Attribute.3.Name" and "Attribute.3.Value"
// form group 3 with the keys "Name" and "Value". A bare "AttributeName.3"
// has the key "".
type group struct {
	index  int
	values url.Values
}

// path is the key prefix of the group in the whole form.
func (g group) path(parent, prefix string) string {
	return parent + prefix + "." + strconv.Itoa(g.index) + "."
}

// indexed splits the keys under prefix into groups ordered by index. The
// Query protocol numbers from 1; the order of the numbers, not of the keys in
// the body, gives the order of a list.
func indexed(form url.Values, prefix string) []group {
	byIndex := make(map[int]url.Values)
	for key, values := range form {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			continue
		}
		digits, field, _ := strings.Cut(rest, ".")
		n, err := strconv.Atoi(digits)
		if err != nil || n < 1 {
			continue
		}
		if byIndex[n] == nil {
			byIndex[n] = make(url.Values)
		}
		byIndex[n][field] = values
	}
	groups := make([]group, 0, len(byIndex))
	for n, values := range byIndex {
		groups = append(groups, group{index: n, values: values})
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].index < groups[j].index })
	return groups
}

// within returns the keys under prefix, with "prefix." removed.
func within(form url.Values, prefix string) url.Values {
	out := make(url.Values)
	for key, values := range form {
		if rest, ok := strings.CutPrefix(key, prefix+"."); ok {
			out[rest] = values
		}
	}
	return out
}

func first(form url.Values, key string) (string, bool) {
	values, ok := form[key]
	if !ok || len(values) == 0 {
		return "", false
	}
	return values[0], true
}

// protocolParams are the form parameters of the Query protocol and of
// request signing, which are not part of any action's input.
var protocolParams = map[string]bool{
	"Action": true, "Version": true,
	"AWSAccessKeyId": true, "Signature": true, "SignatureMethod": true,
	"SignatureVersion": true, "Timestamp": true, "Expires": true,
}

// unindexedStrings is the best JSON body for an action this package does not
// know: its plain parameters as strings. Without the action's shape, indexed
// parameters cannot be rebuilt, so they are left out; the emulator answers
// the call either way.
func unindexedStrings(form url.Values) map[string]any {
	out := make(map[string]any)
	for key, values := range form {
		if protocolParams[key] || strings.HasPrefix(key, "X-Amz-") || strings.Contains(key, ".") || len(values) == 0 {
			continue
		}
		out[key] = values[0]
	}
	return out
}

func invalidValue(key, value, reason string) *queryError {
	return &queryError{
		status:  http.StatusBadRequest,
		code:    "InvalidParameterValue",
		message: fmt.Sprintf("Value %s for parameter %s is invalid. Reason: %s.", value, key, reason),
	}
}

func missingParameter(key string) *queryError {
	return &queryError{
		status:  http.StatusBadRequest,
		code:    "MissingParameter",
		message: fmt.Sprintf("The request must contain the parameter %s.", key),
	}
}
