package billing

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
)

// Item is a DynamoDB item in the JSON protocol's form: attribute name →
// {"S": "..."} and the like.
type Item map[string]json.RawMessage

// ItemSize is the size of an item as DynamoDB counts it for request units:
// for each attribute the UTF-8 length of its name plus the size of its
// value. A malformed value counts as nothing.
func ItemSize(it Item) int {
	n := 0
	for name, raw := range it {
		n += len(name) + valueSize(raw)
	}
	return n
}

// valueSize is the size of one attribute value: a string its UTF-8 length, a
// number one byte per two significant digits plus one, binary its decoded
// length, a boolean or null one byte, a set the sum of its elements, and a
// list or map three bytes plus one per element plus the elements (a map's
// with their names).
func valueSize(raw json.RawMessage) int {
	var av map[string]json.RawMessage
	if json.Unmarshal(raw, &av) != nil {
		return 0
	}
	for typ, v := range av {
		switch typ {
		case "S":
			var s string
			_ = json.Unmarshal(v, &s)
			return len(s)
		case "N":
			var s string
			_ = json.Unmarshal(v, &s)
			return numberSize(s)
		case "B":
			var s string
			_ = json.Unmarshal(v, &s)
			return binarySize(s)
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			var ss []string
			_ = json.Unmarshal(v, &ss)
			total := 0
			for _, s := range ss {
				switch typ {
				case "SS":
					total += len(s)
				case "NS":
					total += numberSize(s)
				default:
					total += binarySize(s)
				}
			}
			return total
		case "L":
			var l []json.RawMessage
			_ = json.Unmarshal(v, &l)
			total := 3
			for _, e := range l {
				total += 1 + valueSize(e)
			}
			return total
		case "M":
			var m Item
			_ = json.Unmarshal(v, &m)
			total := 3
			for name, e := range m {
				total += 1 + len(name) + valueSize(e)
			}
			return total
		}
	}
	return 0
}

// numberSize is 1 byte per two significant digits (leading and trailing
// zeroes trimmed), rounded up, plus 1.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	return (len(s)+1)/2 + 1
}

func binarySize(s string) int {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return len(s)
	}
	return len(b)
}

// WriteUnits are the write request units of writing an item of size bytes
// (1 KB each, rounded up, at least 1).
func WriteUnits(size int) float64 { return float64(max(1, (size+1023)/1024)) }

// ReadUnits are the read request units of reading size bytes (4 KB each,
// rounded up, at least 1), halved when the read is eventually consistent.
func ReadUnits(size int, consistent bool) float64 {
	u := float64(max(1, (size+4095)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// Chunks are the billed requests of an SQS or SNS payload of size bytes
// (64 KB each, rounded up, at least 1).
func Chunks(size int) int64 { return int64(max(1, (size+65535)/65536)) }

// queryUnescapedLen is the length of a form value once unescaped.
func queryUnescapedLen(v string) int {
	if s, err := url.QueryUnescape(v); err == nil {
		return len(s)
	}
	return len(v)
}
