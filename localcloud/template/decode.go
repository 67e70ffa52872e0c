package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// CloudFormation is lenient about scalar types: "30" is a valid Integer,
// "true" a valid Boolean and 5 a valid String (templates written as JSON
// often quote numbers, and a Ref to a Number parameter yields a string). The
// property structs use these types so that the same template decodes here as
// it deploys on AWS.

// intValue is an integer given as a JSON number or a numeric string.
type intValue int

func (v *intValue) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) {
		return typeError[intValue](b)
	}
	*v = intValue(f)
	return nil
}

// ptr converts an optional value, keeping "absent" as nil.
func (v *intValue) ptr() *int {
	if v == nil {
		return nil
	}
	i := int(*v)
	return &i
}

// or returns the value, or def when it is absent.
func (v *intValue) or(def int) int {
	if v == nil {
		return def
	}
	return int(*v)
}

// floatValue is a number given as a JSON number or a numeric string.
type floatValue float64

func (v *floatValue) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(strings.Trim(string(b), `"`), 64)
	if err != nil {
		return typeError[floatValue](b)
	}
	*v = floatValue(f)
	return nil
}

// boolValue is a boolean given as a JSON boolean or the string "true"/"false".
type boolValue bool

func (v *boolValue) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(b), `"`)) {
	case "true":
		*v = true
	case "false":
		*v = false
	default:
		return typeError[boolValue](b)
	}
	return nil
}

func (v *boolValue) or(def bool) bool {
	if v == nil {
		return def
	}
	return bool(*v)
}

// stringValue is a string; numbers and booleans are accepted and formatted,
// as CloudFormation does for String properties such as environment variables.
type stringValue string

func (v *stringValue) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	s, err := scalarString(x)
	if err != nil {
		return typeError[stringValue](b)
	}
	*v = stringValue(s)
	return nil
}

// jsonText is a JSON document given either as an object (YAML map) or as a
// string holding JSON, as CloudFormation accepts for policies such as
// RedrivePolicy or FilterPolicy. It keeps the compact JSON text.
type jsonText string

func (v *jsonText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if !json.Valid([]byte(s)) {
			return typeError[jsonText](b)
		}
		b = []byte(s)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*v = jsonText(buf.String())
	return nil
}

// scalarString formats a resolved scalar the way CloudFormation turns it into
// a string.
func scalarString(x any) (string, error) {
	switch v := x.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	default:
		return "", fmt.Errorf("expected a string, got %s", describe(x))
	}
}

// describe names the JSON kind of a resolved value for error messages.
func describe(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// decodeStrict decodes a resolved value into dst, rejecting properties dst
// does not declare. That strictness is the point: a property the local cloud
// does not know must fail loudly instead of being dropped, so the errors are
// rewritten to name the property.
func decodeStrict(v any, dst any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return describeDecodeError(err)
	}
	return nil
}

func describeDecodeError(err error) error {
	const unknown = `json: unknown field "`
	if msg := err.Error(); strings.HasPrefix(msg, unknown) {
		return fmt.Errorf("unsupported property %q", strings.TrimSuffix(strings.TrimPrefix(msg, unknown), `"`))
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		msg := fmt.Sprintf("expected %s, got %s", expectedName(typeErr.Type), valueName(typeErr.Value))
		if typeErr.Field != "" {
			return fmt.Errorf("property %q: %s", typeErr.Field, msg)
		}
		return errors.New(msg)
	}
	return err
}

// typeError reports a value that does not fit a flexible scalar type as a
// *json.UnmarshalTypeError, to which encoding/json adds the property path.
func typeError[T any](b []byte) error {
	return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[T]()}
}

// expectedName names a Go type the way a template author thinks of it.
func expectedName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[intValue]():
		return "an integer"
	case reflect.TypeFor[floatValue]():
		return "a number"
	case reflect.TypeFor[boolValue]():
		return "a boolean"
	case reflect.TypeFor[jsonText]():
		return "a JSON document"
	}
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	default:
		return "a " + t.Kind().String()
	}
}

// valueName describes the JSON value encoding/json reports: either the
// offending literal or a kind word.
func valueName(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "string" || v == "number" || v == "bool":
		return "a " + v
	case strings.HasPrefix(v, "number "):
		return strings.TrimPrefix(v, "number ")
	default:
		return v
	}
}
