package ddbstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// target is one item a write request addresses: the table and the JSON
// object of attributes that hold its key (the whole item for a put), left
// undecoded until the table is known to have a stream (attributes): most
// writes go to tables without one.
type target struct {
	table string
	raw   json.RawMessage
	// condition is the ConditionExpression of a PutItem or a transaction's
	// Put ("" for anything else): see createsOnly.
	condition string
}

// writeTargets lists the items a write operation addresses, in request
// order. ConditionCheck entries of a transaction change nothing and are left
// out.
func writeTargets(op string, body []byte) ([]target, error) {
	switch op {
	case "PutItem":
		var req struct {
			TableName           string          `json:"TableName"`
			Item                json.RawMessage `json:"Item"`
			ConditionExpression string          `json:"ConditionExpression"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode %s: %w", op, err)
		}
		return []target{{req.TableName, req.Item, req.ConditionExpression}}, nil
	case "UpdateItem", "DeleteItem":
		var req struct {
			TableName string          `json:"TableName"`
			Key       json.RawMessage `json:"Key"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("decode %s: %w", op, err)
		}
		return []target{{req.TableName, req.Key, ""}}, nil
	case "BatchWriteItem":
		return batchWriteTargets(body)
	case "TransactWriteItems":
		return transactWriteTargets(body)
	}
	return nil, fmt.Errorf("%s is not a recorded write", op)
}

type keyed struct {
	TableName           string          `json:"TableName"`
	Key                 json.RawMessage `json:"Key"`
	Item                json.RawMessage `json:"Item"`
	ConditionExpression string          `json:"ConditionExpression"`
}

// attributes decodes the target's attributes. ok is false when they are not
// a JSON object of attributes: kumo rejects such a request.
func (tg target) attributes() (attrs map[string]json.RawMessage, ok bool) {
	if err := json.Unmarshal(tg.raw, &attrs); err != nil {
		return nil, false
	}
	return attrs, attrs != nil
}

func transactWriteTargets(body []byte) ([]target, error) {
	var req struct {
		TransactItems []struct {
			Put    *keyed `json:"Put"`
			Update *keyed `json:"Update"`
			Delete *keyed `json:"Delete"`
		} `json:"TransactItems"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode TransactWriteItems: %w", err)
	}
	var out []target
	for _, it := range req.TransactItems {
		switch {
		case it.Put != nil:
			out = append(out, target{it.Put.TableName, it.Put.Item, it.Put.ConditionExpression})
		case it.Update != nil:
			out = append(out, target{it.Update.TableName, it.Update.Key, ""})
		case it.Delete != nil:
			out = append(out, target{it.Delete.TableName, it.Delete.Key, ""})
		}
	}
	return out, nil
}

// batchWriteTargets reads RequestItems in the order the request lists its
// tables: a Go map would lose that order.
func batchWriteTargets(body []byte) ([]target, error) {
	var req struct {
		RequestItems json.RawMessage `json:"RequestItems"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode BatchWriteItem: %w", err)
	}
	var out []target
	err := eachMember(req.RequestItems, func(table string, raw json.RawMessage) error {
		var writes []struct {
			PutRequest    *keyed `json:"PutRequest"`
			DeleteRequest *keyed `json:"DeleteRequest"`
		}
		if err := json.Unmarshal(raw, &writes); err != nil {
			return err
		}
		for _, w := range writes {
			switch {
			case w.PutRequest != nil:
				out = append(out, target{table, w.PutRequest.Item, ""})
			case w.DeleteRequest != nil:
				out = append(out, target{table, w.DeleteRequest.Key, ""})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode BatchWriteItem: %w", err)
	}
	return out, nil
}

// eachMember calls fn for each member of a JSON object, in document order.
func eachMember(obj json.RawMessage, fn func(name string, value json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string) // object keys are always strings
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := fn(name, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// itemWrite is one item of a stream-enabled table that a write may change.
type itemWrite struct {
	table tableMeta
	key   map[string]json.RawMessage
	// created, when set, is the item a Put creates if it applies at all (see
	// createsOnly): its old image is none and its new image is this, so
	// neither needs reading.
	created image
}

// createsOnly reports whether a Put's condition is attribute_not_exists of
// one of the table's key attributes: then the Put applies only where no
// item was, and the item after it is exactly the one put.
func createsOnly(t tableMeta, condition string) bool {
	attr, ok := strings.CutPrefix(strings.TrimSpace(condition), "attribute_not_exists(")
	if !ok {
		return false
	}
	attr, ok = strings.CutSuffix(attr, ")")
	if !ok {
		return false
	}
	attr = strings.TrimSpace(attr)
	for _, k := range t.KeySchema {
		if k.AttributeName == attr {
			return true
		}
	}
	return false
}

// keyOf extracts the primary key from the attributes of a target. ok is
// false when an attribute of the key is missing: kumo rejects such a
// request.
func keyOf(t tableMeta, attrs map[string]json.RawMessage) (key map[string]json.RawMessage, ok bool) {
	key = make(map[string]json.RawMessage, len(t.KeySchema))
	for _, k := range t.KeySchema {
		v, found := attrs[k.AttributeName]
		if !found {
			return nil, false
		}
		key[k.AttributeName] = v
	}
	return key, len(key) > 0
}

// identity names an item across tables; two writes to the same item in one
// request have the same identity. json.Marshal sorts the key's attributes
// and compacts their values.
func (w itemWrite) identity() string {
	b, _ := json.Marshal(w.key) // a map of raw JSON values re-marshals without error
	return w.table.Name + "\x00" + string(b)
}
