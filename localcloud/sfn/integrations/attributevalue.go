package integrations

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute values travel through Step Functions in DynamoDB's JSON form,
// {"S": "text"}, {"N": "12"}, {"M": {...}}; these functions convert between
// that form and the SDK's types.

func attributeMapFromJSON(raw map[string]json.RawMessage) (map[string]types.AttributeValue, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(raw))
	for k, v := range raw {
		av, err := attributeFromJSON(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func attributeFromJSON(raw json.RawMessage) (types.AttributeValue, error) {
	var tagged map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tagged); err != nil || len(tagged) != 1 {
		return nil, fmt.Errorf("an attribute value must be an object with exactly one type key, got %s", raw)
	}
	for typ, v := range tagged {
		switch typ {
		case "S":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("an S value must be a string: %w", err)
			}
			return &types.AttributeValueMemberS{Value: s}, nil
		case "N":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("an N value must be a string holding a number, got %s", v)
			}
			return &types.AttributeValueMemberN{Value: s}, nil
		case "B":
			b, err := decodeBinary(v)
			if err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberB{Value: b}, nil
		case "BOOL":
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, fmt.Errorf("a BOOL value must be a boolean: %w", err)
			}
			return &types.AttributeValueMemberBOOL{Value: b}, nil
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "M":
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, fmt.Errorf("an M value must be an object: %w", err)
			}
			mv, err := attributeMapFromJSON(m)
			if err != nil {
				return nil, err
			}
			if mv == nil {
				mv = map[string]types.AttributeValue{}
			}
			return &types.AttributeValueMemberM{Value: mv}, nil
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(v, &l); err != nil {
				return nil, fmt.Errorf("an L value must be an array: %w", err)
			}
			out := make([]types.AttributeValue, len(l))
			for i, item := range l {
				av, err := attributeFromJSON(item)
				if err != nil {
					return nil, err
				}
				out[i] = av
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "SS", "NS":
			var ss []string
			if err := json.Unmarshal(v, &ss); err != nil {
				return nil, fmt.Errorf("an %s value must be an array of strings: %w", typ, err)
			}
			if typ == "SS" {
				return &types.AttributeValueMemberSS{Value: ss}, nil
			}
			return &types.AttributeValueMemberNS{Value: ss}, nil
		case "BS":
			var bs []json.RawMessage
			if err := json.Unmarshal(v, &bs); err != nil {
				return nil, fmt.Errorf("a BS value must be an array: %w", err)
			}
			out := make([][]byte, len(bs))
			for i, item := range bs {
				b, err := decodeBinary(item)
				if err != nil {
					return nil, err
				}
				out[i] = b
			}
			return &types.AttributeValueMemberBS{Value: out}, nil
		default:
			return nil, fmt.Errorf("unknown attribute type %q", typ)
		}
	}
	panic("unreachable")
}

func decodeBinary(v json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("binary values must be base64 strings: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("binary values must be base64 strings: %w", err)
	}
	return b, nil
}

func attributeMapToJSON(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = attributeToJSON(v)
	}
	return out
}

func attributeToJSON(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": attributeMapToJSON(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, item := range v.Value {
			l[i] = attributeToJSON(item)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberBS:
		l := make([]string, len(v.Value))
		for i, b := range v.Value {
			l[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": l}
	}
	return nil
}
