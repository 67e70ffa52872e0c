package ddbstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// requestDigest hashes a request in canonical form. The SDKs serialise Go
// maps (items, expression values) in random order, so a retry of the same
// request may differ byte for byte; the canonical form lists every object's
// members sorted by name and drops insignificant white space, keeping
// strings and numbers exactly as written.
//
// Every TransactWriteItems carries a ClientRequestToken (the SDKs fill one
// in), so this runs for every transaction: it scans the bytes once instead
// of decoding into maps and encoding again.
func requestDigest(body []byte) ([sha256.Size]byte, error) {
	_, digest, err := tokenAndDigest(body)
	return digest, err
}

// tokenAndDigest returns the request's top-level ClientRequestToken ("" if
// it has none) and its requestDigest, in one scan.
func tokenAndDigest(body []byte) (string, [sha256.Size]byte, error) {
	c := canonicalizer{in: body}
	out, err := c.value(nil)
	if err != nil {
		return "", [sha256.Size]byte{}, fmt.Errorf("decode request: %w", err)
	}
	if c.skipSpace(); c.pos != len(c.in) {
		return "", [sha256.Size]byte{}, fmt.Errorf("decode request: data after the value at offset %d", c.pos)
	}
	var token string
	if c.token != nil {
		if err := json.Unmarshal(c.token, &token); err != nil {
			return "", [sha256.Size]byte{}, fmt.Errorf("decode ClientRequestToken: %w", err)
		}
	}
	return token, sha256.Sum256(out), nil
}

// canonicalizer rewrites one JSON document in canonical form.
type canonicalizer struct {
	in  []byte
	pos int
	// spans and scratch are reused across the document's objects.
	spans   []span
	scratch []byte
	// depth is the nesting of the value being read; token is the value of
	// the top-level member ClientRequestToken, as written.
	depth int
	token []byte
}

var errJSONEnd = errors.New("unexpected end of JSON")

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at pos to out.
func (c *canonicalizer) value(out []byte) ([]byte, error) {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return nil, errJSONEnd
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(out)
	case b == '[':
		return c.array(out)
	case b == '"':
		s, err := c.str()
		return append(out, s...), err
	default:
		return c.literal(out)
	}
}

// span is where one object member's canonical form lies in the output, and
// where its name ends.
type span struct{ start, name, end int }

// object appends the object's members in canonical form and, if they are
// not in name order, rewrites them in order.
func (c *canonicalizer) object(out []byte) ([]byte, error) {
	c.pos++ // {
	out = append(out, '{')
	base := len(c.spans)
	c.depth++
	defer func() { c.spans, c.depth = c.spans[:base], c.depth-1 }()
	if empty, err := c.empty('}'); err != nil {
		return nil, err
	} else if empty {
		return append(out, '}'), nil
	}
	for first := true; ; first = false {
		c.skipSpace()
		name, err := c.str()
		if err != nil {
			return nil, err
		}
		if c.skipSpace(); c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return nil, fmt.Errorf("expected ':' at offset %d", c.pos)
		}
		c.pos++
		if !first {
			out = append(out, ',')
		}
		sp := span{start: len(out)}
		out = append(out, name...)
		sp.name = len(out)
		out = append(out, ':')
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		sp.end = len(out)
		if c.depth == 1 && string(name) == `"ClientRequestToken"` {
			c.token = bytes.Clone(out[sp.name+1 : sp.end])
		}
		c.spans = append(c.spans, sp)
		if done, err := c.separator('}'); err != nil {
			return nil, err
		} else if done {
			break
		}
	}
	members := c.spans[base:]
	byName := func(a, b span) int { return bytes.Compare(out[a.start:a.name], out[b.start:b.name]) }
	if !slices.IsSortedFunc(members, byName) {
		slices.SortFunc(members, byName)
		region := slices.MinFunc(members, func(a, b span) int { return a.start - b.start }).start
		c.scratch = append(c.scratch[:0], out[region:]...)
		out = out[:region]
		for i, m := range members {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, c.scratch[m.start-region:m.end-region]...)
		}
	}
	return append(out, '}'), nil
}

func (c *canonicalizer) array(out []byte) ([]byte, error) {
	c.pos++ // [
	out = append(out, '[')
	if empty, err := c.empty(']'); err != nil {
		return nil, err
	} else if empty {
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		var err error
		if out, err = c.value(out); err != nil {
			return nil, err
		}
		if done, err := c.separator(']'); err != nil {
			return nil, err
		} else if done {
			return append(out, ']'), nil
		}
	}
}

// empty consumes closing if it is the next byte: the container just opened
// is empty.
func (c *canonicalizer) empty(closing byte) (bool, error) {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return false, errJSONEnd
	}
	if c.in[c.pos] == closing {
		c.pos++
		return true, nil
	}
	return false, nil
}

// separator consumes what follows a member or an element: closing (done)
// or a comma.
func (c *canonicalizer) separator(closing byte) (done bool, err error) {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return false, errJSONEnd
	}
	switch c.in[c.pos] {
	case closing:
		c.pos++
		return true, nil
	case ',':
		c.pos++
		return false, nil
	}
	return false, fmt.Errorf("expected ',' or %q at offset %d", closing, c.pos)
}

// str returns the string at pos as written, quotes included.
func (c *canonicalizer) str() ([]byte, error) {
	if c.pos >= len(c.in) || c.in[c.pos] != '"' {
		return nil, fmt.Errorf("expected a string at offset %d", c.pos)
	}
	start := c.pos
	for c.pos++; c.pos < len(c.in); c.pos++ {
		switch c.in[c.pos] {
		case '\\':
			c.pos++
		case '"':
			c.pos++
			return c.in[start:c.pos], nil
		}
	}
	return nil, errJSONEnd
}

// literal appends a number, true, false or null as written.
func (c *canonicalizer) literal(out []byte) ([]byte, error) {
	start := c.pos
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		if b == ',' || b == '}' || b == ']' || b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			break
		}
		c.pos++
	}
	lit := c.in[start:c.pos]
	switch {
	case len(lit) == 0:
		return nil, fmt.Errorf("expected a value at offset %d", start)
	case string(lit) == "true", string(lit) == "false", string(lit) == "null":
	case lit[0] == '-' || (lit[0] >= '0' && lit[0] <= '9'):
		for _, b := range lit {
			if !(b >= '0' && b <= '9' || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E') {
				return nil, fmt.Errorf("invalid number %q at offset %d", lit, start)
			}
		}
	default:
		return nil, fmt.Errorf("invalid value %q at offset %d", lit, start)
	}
	return append(out, lit...), nil
}
