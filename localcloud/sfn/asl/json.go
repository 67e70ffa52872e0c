package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// Values handled by the interpreter are the result of decoding JSON into
// `any` with numbers kept as json.Number: map[string]any, []any, string,
// json.Number, bool and nil. They are never modified in place once decoded,
// so they can be shared between states, branches and history events.

// DecodeJSON decodes exactly one JSON value, keeping numbers as json.Number
// so that integers survive unchanged.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// EncodeJSON encodes a value compactly and without HTML escaping, as AWS
// prints payloads.
func EncodeJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Values come from DecodeJSON or the interpreter; they always encode.
		panic(fmt.Sprintf("asl: encode %T: %v", v, err))
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

// toFloat returns the numeric value of a JSON number.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// toInt returns the value of a JSON number that is an integer.
func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
		f, err := n.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n != math.Trunc(n) {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

func isNumber(v any) bool { _, ok := toFloat(v); return ok }

// number builds a JSON number from an integer.
func number(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// jsonEqual compares two values as JSON: numbers by value, objects by content.
func jsonEqual(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// typeName names a value's JSON type for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	if isNumber(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// Int returns an integer as a JSON number value.
func Int(i int64) any { return number(i) }

// ToInt returns the value of a JSON number that is an integer.
func ToInt(v any) (int64, bool) { return toInt(v) }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
