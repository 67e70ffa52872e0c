package sqsquery

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// xmlNamespace is the namespace of every SQS Query response.
const xmlNamespace = "http://queue.amazonaws.com/doc/2012-11-05/"

// listElements names the XML element of each list in SQS output. The Query
// protocol flattens lists: each item is one element named after the item,
// directly inside the parent. "Successful" depends on the action and is
// handled in listElement.
var listElements = map[string]string{
	"QueueUrls":        "QueueUrl",
	"queueUrls":        "QueueUrl", // ListDeadLetterSourceQueues
	"Messages":         "Message",
	"Failed":           "BatchResultErrorEntry",
	"StringListValues": "StringListValue",
	"BinaryListValues": "BinaryListValue",
	"Results":          "ListMessageMoveTasksResultEntry",
}

// xmlMap is how the Query protocol writes one map: a flattened element per
// entry, holding a key element and a Value element.
type xmlMap struct {
	entry, key string
}

// mapElements lists the maps in SQS output.
var mapElements = map[string]xmlMap{
	"Attributes":        {entry: "Attribute", key: "Name"},
	"MessageAttributes": {entry: "MessageAttribute", key: "Name"},
	"Tags":              {entry: "Tag", key: "Key"},
}

func listElement(action, member string) string {
	if member == "Successful" {
		return action + "ResultEntry" // SendMessageBatchResultEntry, ...
	}
	if name, ok := listElements[member]; ok {
		return name
	}
	return member
}

// renderResult turns the JSON output of action into its Query XML response.
func renderResult(action, requestID string, body []byte) ([]byte, error) {
	output := jsonObject{}
	if len(bytes.TrimSpace(body)) > 0 {
		v, err := decodeOrdered(body)
		if err != nil {
			return nil, fmt.Errorf("read %s output: %w", action, err)
		}
		obj, ok := v.(jsonObject)
		if !ok {
			return nil, fmt.Errorf("read %s output: want a JSON object, got %T", action, v)
		}
		output = obj
	}

	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	x := &xmlWriter{enc: xml.NewEncoder(&buf), action: action}
	x.start(xml.StartElement{
		Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: xmlNamespace}},
	})
	a, known := actions[action]
	if (known && a.hasResult) || (!known && len(output) > 0) {
		x.start(element(action + "Result"))
		for _, m := range output {
			x.member(m.name, m.value)
		}
		x.end(action + "Result")
	}
	x.start(element("ResponseMetadata"))
	x.leaf("RequestId", requestID)
	x.end("ResponseMetadata")
	x.end(action + "Response")
	if err := x.flush(); err != nil {
		return nil, fmt.Errorf("write %s response: %w", action, err)
	}
	return buf.Bytes(), nil
}

// xmlWriter writes the Query form of JSON values. Its first error sticks and
// is returned by flush, which keeps the writing code free of checks.
type xmlWriter struct {
	enc    *xml.Encoder
	action string
	err    error
}

// member writes one named member of a structure.
func (x *xmlWriter) member(name string, v any) {
	switch v := v.(type) {
	case []any:
		item := listElement(x.action, name)
		for _, e := range v {
			x.value(item, e)
		}
	case jsonObject:
		m, ok := mapElements[name]
		if !ok {
			x.value(name, v)
			return
		}
		for _, e := range v {
			x.start(element(m.entry))
			x.leaf(m.key, e.name)
			x.value("Value", e.value)
			x.end(m.entry)
		}
	default:
		x.value(name, v)
	}
}

// value writes v as the element name.
func (x *xmlWriter) value(name string, v any) {
	switch v := v.(type) {
	case nil:
		// A JSON null is an absent member.
	case jsonObject:
		x.start(element(name))
		for _, m := range v {
			x.member(m.name, m.value)
		}
		x.end(name)
	case []any:
		for _, e := range v {
			x.value(name, e)
		}
	case string:
		x.leaf(name, v)
	case json.Number:
		x.leaf(name, v.String())
	case bool:
		x.leaf(name, strconv.FormatBool(v))
	default:
		x.fail(fmt.Errorf("member %s: unexpected JSON value %T", name, v))
	}
}

func (x *xmlWriter) leaf(name, text string) {
	x.start(element(name))
	x.token(xml.CharData(text))
	x.end(name)
}

func (x *xmlWriter) start(e xml.StartElement) { x.token(e) }
func (x *xmlWriter) end(name string)          { x.token(xml.EndElement{Name: xml.Name{Local: name}}) }

func (x *xmlWriter) token(t xml.Token) {
	if x.err == nil {
		x.fail(x.enc.EncodeToken(t))
	}
}

func (x *xmlWriter) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

func (x *xmlWriter) flush() error {
	if x.err != nil {
		return x.err
	}
	return x.enc.Flush()
}

func element(name string) xml.StartElement { return xml.StartElement{Name: xml.Name{Local: name}} }

// jsonObject is a JSON object with its members in document order, so that
// the XML lists them in the order the emulator wrote them (the order of the
// AWS shapes), not in Go's map order.
type jsonObject []jsonMember

type jsonMember struct {
	name  string
	value any
}

// decodeOrdered decodes one JSON document into jsonObject, []any, string,
// json.Number, bool and nil values.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '{':
		obj := jsonObject{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jsonMember{name: key.(string), value: v})
		}
		_, err := dec.Token() // '}'
		return obj, err
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ']'
		return arr, err
	}
	return nil, fmt.Errorf("unexpected JSON delimiter %q", delim)
}
