package asl

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Call is a compiled intrinsic function call such as
// States.Format('Hello {}', $.name).
type Call struct {
	src  string
	fn   intrinsic
	args []argument
}

type argument struct {
	literal any
	isLit   bool
	rawLit  string // a string literal with its escapes kept, for States.Format
	path    *Path
	call    *Call
}

type intrinsic struct {
	name    string
	minArgs int
	maxArgs int // -1: unbounded
	eval    func(args []any, raw []argument) (any, error)
}

var intrinsics = map[string]intrinsic{}

func init() {
	for _, f := range []intrinsic{
		{"States.Format", 1, -1, fnFormat},
		{"States.StringToJson", 1, 1, fnStringToJSON},
		{"States.JsonToString", 1, 1, fnJSONToString},
		{"States.Array", 0, -1, fnArray},
		{"States.ArrayPartition", 2, 2, fnArrayPartition},
		{"States.ArrayContains", 2, 2, fnArrayContains},
		{"States.ArrayRange", 3, 3, fnArrayRange},
		{"States.ArrayGetItem", 2, 2, fnArrayGetItem},
		{"States.ArrayLength", 1, 1, fnArrayLength},
		{"States.ArrayUnique", 1, 1, fnArrayUnique},
		{"States.Base64Encode", 1, 1, fnBase64Encode},
		{"States.Base64Decode", 1, 1, fnBase64Decode},
		{"States.Hash", 2, 2, fnHash},
		{"States.JsonMerge", 3, 3, fnJSONMerge},
		{"States.MathRandom", 2, 3, fnMathRandom},
		{"States.MathAdd", 2, 2, fnMathAdd},
		{"States.StringSplit", 2, 2, fnStringSplit},
		{"States.UUID", 0, 0, fnUUID},
	} {
		intrinsics[f.name] = f
	}
}

// IsIntrinsic reports whether s looks like an intrinsic function call.
func IsIntrinsic(s string) bool { return strings.HasPrefix(s, "States.") }

// ParseIntrinsic compiles an intrinsic function call, checking the function
// name and its number of arguments.
func ParseIntrinsic(src string) (*Call, error) {
	c, rest, err := parseCall(strings.TrimSpace(src))
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %w", src, err)
	}
	if strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("invalid intrinsic function %q: unexpected %q", src, rest)
	}
	return c, nil
}

func parseCall(s string) (*Call, string, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return nil, "", fmt.Errorf("missing '('")
	}
	name := strings.TrimSpace(s[:open])
	fn, ok := intrinsics[name]
	if !ok {
		return nil, "", fmt.Errorf("unknown function %s", name)
	}
	c := &Call{fn: fn}
	rest := s[open+1:]
	for {
		rest = strings.TrimLeft(rest, " \t\n")
		if strings.HasPrefix(rest, ")") {
			rest = rest[1:]
			break
		}
		if len(c.args) > 0 {
			if !strings.HasPrefix(rest, ",") {
				return nil, "", fmt.Errorf("expected ',' or ')' at %q", rest)
			}
			rest = strings.TrimLeft(rest[1:], " \t\n")
		}
		arg, r, err := parseArgument(rest)
		if err != nil {
			return nil, "", err
		}
		c.args = append(c.args, arg)
		rest = r
	}
	if len(c.args) < fn.minArgs || (fn.maxArgs >= 0 && len(c.args) > fn.maxArgs) {
		return nil, "", fmt.Errorf("%s takes %s, got %d", name, arity(fn), len(c.args))
	}
	c.src = s[:len(s)-len(rest)]
	return c, rest, nil
}

func arity(fn intrinsic) string {
	switch {
	case fn.maxArgs < 0:
		return fmt.Sprintf("at least %d arguments", fn.minArgs)
	case fn.minArgs == fn.maxArgs:
		return fmt.Sprintf("%d arguments", fn.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", fn.minArgs, fn.maxArgs)
}

func parseArgument(s string) (argument, string, error) {
	switch {
	case s == "":
		return argument{}, "", fmt.Errorf("missing argument")
	case s[0] == '\'':
		var val, raw strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				raw.WriteByte('\\')
				raw.WriteByte(s[i])
				val.WriteByte(s[i])
				continue
			}
			if c == '\'' {
				return argument{literal: val.String(), isLit: true, rawLit: raw.String()}, s[i+1:], nil
			}
			raw.WriteByte(c)
			val.WriteByte(c)
		}
		return argument{}, "", fmt.Errorf("unterminated string")
	case s[0] == '$':
		end := len(s)
		depth := 0
		for i := 0; i < len(s); i++ {
			if s[i] == '[' {
				depth++
			} else if s[i] == ']' {
				depth--
			} else if depth == 0 && (s[i] == ',' || s[i] == ')') {
				end = i
				break
			}
		}
		p, err := ParsePath(strings.TrimSpace(s[:end]))
		if err != nil {
			return argument{}, "", err
		}
		return argument{path: p}, s[end:], nil
	case strings.HasPrefix(s, "States."):
		c, rest, err := parseCall(s)
		return argument{call: c}, rest, err
	}
	end := strings.IndexAny(s, ",)")
	if end < 0 {
		end = len(s)
	}
	tok := strings.TrimSpace(s[:end])
	switch tok {
	case "true":
		return argument{literal: true, isLit: true}, s[end:], nil
	case "false":
		return argument{literal: false, isLit: true}, s[end:], nil
	case "null":
		return argument{literal: nil, isLit: true}, s[end:], nil
	}
	if _, err := strconv.ParseFloat(tok, 64); err != nil {
		return argument{}, "", fmt.Errorf("bad argument %q", tok)
	}
	return argument{literal: json.Number(tok), isLit: true}, s[end:], nil
}

// String returns the source text of the call.
func (c *Call) String() string { return c.src }

// Eval evaluates the call. A failure is a States.Runtime error naming the
// function, as AWS reports failed intrinsic functions.
func (c *Call) Eval(s *Scope) (any, error) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		switch {
		case a.isLit:
			args[i] = a.literal
		case a.path != nil:
			v, ok := s.Get(a.path)
			if !ok {
				return nil, Runtimef("The JsonPath argument %s of the intrinsic function %s could not be found in the input", a.path, c.fn.name)
			}
			args[i] = v
		default:
			v, err := a.call.Eval(s)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
	}
	v, err := c.fn.eval(args, c.args)
	if err != nil {
		if e, ok := err.(*Error); ok {
			return nil, e
		}
		return nil, Runtimef("%s: %v", c.fn.name, err)
	}
	return v, nil
}

func argString(args []any, i int, fn string) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", fmt.Errorf("argument %d of %s must be a string, got %s", i+1, fn, typeName(args[i]))
	}
	return s, nil
}

func argArray(args []any, i int, fn string) ([]any, error) {
	a, ok := args[i].([]any)
	if !ok {
		return nil, fmt.Errorf("argument %d of %s must be an array, got %s", i+1, fn, typeName(args[i]))
	}
	return a, nil
}

func argInt(args []any, i int, fn string) (int64, error) {
	n, ok := toInt(args[i])
	if !ok {
		return 0, fmt.Errorf("argument %d of %s must be an integer, got %s", i+1, fn, EncodeJSON(args[i]))
	}
	return n, nil
}

// argRounded reads a number argument of the math functions. AWS documents
// that a non-integer is rounded to the nearest integer; its recorded
// answers round halves up, as Java's Math.round does (1.5 → 2, -1.5 → -1,
// -2.5 → -2), so that is what this does.
func argRounded(args []any, i int, fn string) (int64, error) {
	if n, ok := toInt(args[i]); ok {
		return n, nil
	}
	f, ok := toFloat(args[i])
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("argument %d of %s must be a number, got %s", i+1, fn, EncodeJSON(args[i]))
	}
	r := math.Floor(f + 0.5)
	if math.Abs(r) > 1<<53 {
		return 0, fmt.Errorf("argument %d of %s is out of range: %s", i+1, fn, EncodeJSON(args[i]))
	}
	return int64(r), nil
}

// MaxIntrinsicString is the longest string AWS accepts as the input of
// States.Base64Encode, States.Base64Decode and States.Hash.
const MaxIntrinsicString = 10000

// argLimited reads a string argument that AWS limits to
// MaxIntrinsicString characters.
func argLimited(args []any, i int, fn string) (string, error) {
	s, err := argString(args, i, fn)
	if err != nil {
		return "", err
	}
	if n := len([]rune(s)); n > MaxIntrinsicString {
		return "", fmt.Errorf("argument %d of %s has %d characters; at most %d are allowed", i+1, fn, n, MaxIntrinsicString)
	}
	return s, nil
}

func fnFormat(args []any, raw []argument) (any, error) {
	tmpl, err := argString(args, 0, "States.Format")
	if err != nil {
		return nil, err
	}
	// Escaped braces (\{ \}) are literal, so work on the raw text when the
	// template is a literal.
	src := tmpl
	if raw[0].isLit {
		src = raw[0].rawLit
	}
	var b strings.Builder
	next := 1
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && raw[0].isLit && i+1 < len(src):
			i++
			b.WriteByte(src[i])
		case c == '{' && i+1 < len(src) && src[i+1] == '}':
			if next >= len(args) {
				return nil, fmt.Errorf("the template has more placeholders than arguments")
			}
			switch v := args[next].(type) {
			case string:
				b.WriteString(v)
			default:
				b.WriteString(EncodeJSON(v))
			}
			next++
			i++
		default:
			b.WriteByte(c)
		}
	}
	if next != len(args) {
		return nil, fmt.Errorf("the template has %d placeholders but %d arguments were given", next-1, len(args)-1)
	}
	return b.String(), nil
}

func fnStringToJSON(args []any, _ []argument) (any, error) {
	s, err := argString(args, 0, "States.StringToJson")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		// AWS answers null for an empty or blank string rather than
		// failing: there is no JSON text to parse, so there is no value.
		return nil, nil
	}
	return DecodeJSON([]byte(s))
}

func fnJSONToString(args []any, _ []argument) (any, error) { return EncodeJSON(args[0]), nil }

func fnArray(args []any, _ []argument) (any, error) { return append([]any{}, args...), nil }

func fnArrayPartition(args []any, _ []argument) (any, error) {
	arr, err := argArray(args, 0, "States.ArrayPartition")
	if err != nil {
		return nil, err
	}
	size, err := argInt(args, 1, "States.ArrayPartition")
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("the chunk size must be positive")
	}
	out := []any{}
	for i := 0; i < len(arr); i += int(size) {
		out = append(out, append([]any{}, arr[i:min(i+int(size), len(arr))]...))
	}
	return out, nil
}

func fnArrayContains(args []any, _ []argument) (any, error) {
	arr, err := argArray(args, 0, "States.ArrayContains")
	if err != nil {
		return nil, err
	}
	for _, v := range arr {
		if jsonEqual(v, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

func fnArrayRange(args []any, _ []argument) (any, error) {
	var n [3]int64
	for i := range n {
		v, err := argInt(args, i, "States.ArrayRange")
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	start, end, stepN := n[0], n[1], n[2]
	if stepN == 0 {
		return nil, fmt.Errorf("the step must not be zero")
	}
	out := []any{}
	for i := start; (stepN > 0 && i <= end) || (stepN < 0 && i >= end); i += stepN {
		if len(out) == 1000 {
			return nil, fmt.Errorf("the range has more than 1000 items")
		}
		out = append(out, number(i))
	}
	return out, nil
}

func fnArrayGetItem(args []any, _ []argument) (any, error) {
	arr, err := argArray(args, 0, "States.ArrayGetItem")
	if err != nil {
		return nil, err
	}
	i, err := argInt(args, 1, "States.ArrayGetItem")
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= int64(len(arr)) {
		// AWS answers null for an index outside the array (the
		// documentation does not say; see docs/local-cloud.md).
		return nil, nil
	}
	return arr[i], nil
}

func fnArrayLength(args []any, _ []argument) (any, error) {
	arr, err := argArray(args, 0, "States.ArrayLength")
	if err != nil {
		return nil, err
	}
	return number(int64(len(arr))), nil
}

func fnArrayUnique(args []any, _ []argument) (any, error) {
	arr, err := argArray(args, 0, "States.ArrayUnique")
	if err != nil {
		return nil, err
	}
	out := []any{}
next:
	for _, v := range arr {
		for _, seen := range out {
			if jsonEqual(seen, v) {
				continue next
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func fnBase64Encode(args []any, _ []argument) (any, error) {
	s, err := argLimited(args, 0, "States.Base64Encode")
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func fnBase64Decode(args []any, _ []argument) (any, error) {
	s, err := argLimited(args, 0, "States.Base64Decode")
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	return string(b), nil
}

func fnHash(args []any, _ []argument) (any, error) {
	data, err := argLimited(args, 0, "States.Hash")
	if err != nil {
		return nil, err
	}
	alg, err := argString(args, 1, "States.Hash")
	if err != nil {
		return nil, err
	}
	var h hash.Hash
	switch alg {
	case "MD5":
		h = md5.New()
	case "SHA-1":
		h = sha1.New()
	case "SHA-256":
		h = sha256.New()
	case "SHA-384":
		h = sha512.New384()
	case "SHA-512":
		h = sha512.New()
	default:
		return nil, fmt.Errorf("unknown algorithm %q (MD5, SHA-1, SHA-256, SHA-384, SHA-512)", alg)
	}
	h.Write([]byte(data))
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fnJSONMerge(args []any, _ []argument) (any, error) {
	a, ok1 := args[0].(map[string]any)
	b, ok2 := args[1].(map[string]any)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("both arguments must be objects")
	}
	if deep, ok := args[2].(bool); !ok || deep {
		// AWS supports only the shallow mode.
		return nil, fmt.Errorf("the third argument must be false: only shallow merging is supported")
	}
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out, nil
}

func fnMathRandom(args []any, _ []argument) (any, error) {
	start, err := argRounded(args, 0, "States.MathRandom")
	if err != nil {
		return nil, err
	}
	end, err := argRounded(args, 1, "States.MathRandom")
	if err != nil {
		return nil, err
	}
	if end <= start {
		return nil, fmt.Errorf("the end must be greater than the start")
	}
	r := rand.Int64N
	if len(args) == 3 {
		seed, err := argInt(args, 2, "States.MathRandom")
		if err != nil {
			return nil, err
		}
		r = rand.New(rand.NewPCG(uint64(seed), 0)).Int64N
	}
	return number(start + r(end-start)), nil
}

func fnMathAdd(args []any, _ []argument) (any, error) {
	a, err := argRounded(args, 0, "States.MathAdd")
	if err != nil {
		return nil, err
	}
	b, err := argRounded(args, 1, "States.MathAdd")
	if err != nil {
		return nil, err
	}
	return number(a + b), nil
}

func fnStringSplit(args []any, _ []argument) (any, error) {
	s, err := argString(args, 0, "States.StringSplit")
	if err != nil {
		return nil, err
	}
	seps, err := argString(args, 1, "States.StringSplit")
	if err != nil {
		return nil, err
	}
	// Every character of the second argument is a delimiter and empty
	// tokens are dropped, as java.util.StringTokenizer does on AWS.
	out := []any{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		out = append(out, f)
	}
	return out, nil
}

func fnUUID([]any, []argument) (any, error) { return uuid.NewString(), nil }
