package store

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A cursor is where a paginated read stopped (DynamoDB's LastEvaluatedKey),
// handed to the caller and back: the key's attributes, all strings, as JSON
// in unpadded base64url. "" is the start (or, returned, the end). Every
// reader checks the attributes it gets back and rebuilds the key itself, so
// a cursor can only ever move a read within what its caller may read.

// maxCursorLength bounds what a caller may send: the keys of this package
// are well under it.
const maxCursorLength = 2048

var errNotACursor = errors.New("not a cursor")

// encodeCursor returns the cursor of key ("" for none). Every attribute of
// the keys this package reads is a string.
func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	values := make(map[string]string, len(key))
	for name, v := range key {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("cursor: key attribute %s is not a string", name)
		}
		values[name] = s.Value
	}
	b, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor returns the attributes of a cursor; errNotACursor when it is
// not one this package could have issued.
func decodeCursor(c string) (map[string]string, error) {
	if len(c) > maxCursorLength {
		return nil, errNotACursor
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, errNotACursor
	}
	var values map[string]string
	if err := json.Unmarshal(b, &values); err != nil || len(values) == 0 {
		return nil, errNotACursor
	}
	return values, nil
}
