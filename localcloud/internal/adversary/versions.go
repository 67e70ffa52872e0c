package adversary

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// versions keeps, for the items written within the staleness window, the
// version each had before its latest write: what a stale read or a lagging
// index still shows.
type versions struct {
	a  *Adversary
	mu sync.Mutex
	// byItem holds the version before the latest write, nil for no item.
	byItem map[string]version
	order  []string // items by the time of their latest write, oldest first
	// schemas are the tables' key attributes and their global indexes'.
	schemas map[string]tableSchema
}

type version struct {
	before json.RawMessage
	at     time.Time
}

type tableSchema struct {
	key []string
	// indexes are the global secondary indexes' key attributes, by name.
	indexes map[string][]string
}

func newVersions(a *Adversary) *versions {
	return &versions{a: a, byItem: map[string]version{}, schemas: map[string]tableSchema{}}
}

// wrote records that item was just written, and was before before.
func (v *versions) wrote(item string, before json.RawMessage) {
	now := v.a.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.byItem[item] = version{before: before, at: now}
	v.order = append(v.order, item)
	cutoff := now.Add(-v.a.Staleness)
	for len(v.order) > 0 {
		first, ok := v.byItem[v.order[0]]
		if ok && first.at.After(cutoff) {
			break
		}
		if ok {
			delete(v.byItem, v.order[0])
		}
		v.order = v.order[1:]
	}
}

// recent returns the item's version before its latest write, when that
// write is within the staleness window.
func (v *versions) recent(item string) (json.RawMessage, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ver, ok := v.byItem[item]
	if !ok || v.a.now().Sub(ver.at) > v.a.Staleness {
		return nil, false
	}
	return ver.before, true
}

// target is one item a write names.
type target struct {
	table string
	key   map[string]json.RawMessage
}

// targets are the items a write call names (a Put's by its item's key).
func (v *versions) targets(c *call) []target {
	type one struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	var ops []one
	switch c.operation {
	case "TransactWriteItems":
		var in struct{ TransactItems []map[string]one }
		_ = json.Unmarshal(c.body, &in)
		for _, ti := range in.TransactItems {
			for kind, op := range ti {
				if kind != "ConditionCheck" {
					ops = append(ops, op)
				}
			}
		}
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item map[string]json.RawMessage }
				DeleteRequest *struct{ Key map[string]json.RawMessage }
			}
		}
		_ = json.Unmarshal(c.body, &in)
		for table, reqs := range in.RequestItems {
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					ops = append(ops, one{TableName: table, Item: r.PutRequest.Item})
				case r.DeleteRequest != nil:
					ops = append(ops, one{TableName: table, Key: r.DeleteRequest.Key})
				}
			}
		}
	default:
		var op one
		_ = json.Unmarshal(c.body, &op)
		ops = append(ops, op)
	}
	var out []target
	for _, op := range ops {
		key := op.Key
		if key == nil && op.Item != nil {
			if s, ok := v.schema(c.r, op.TableName); ok {
				key = project(op.Item, s.key)
			}
		}
		if op.TableName != "" && len(key) > 0 {
			out = append(out, target{table: op.TableName, key: key})
		}
	}
	return out
}

// read is the item as it is now (a consistent GetItem to the engine), nil
// when there is none.
func (v *versions) read(r *http.Request, table string, key map[string]json.RawMessage) json.RawMessage {
	body, _ := json.Marshal(map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	ans := forward(v.a.engine, request(r, "DynamoDB_20120810.GetItem", body), body)
	var out struct{ Item json.RawMessage }
	if !ans.ok() || json.Unmarshal(ans.body, &out) != nil || len(out.Item) == 0 || string(out.Item) == "null" {
		return nil
	}
	return out.Item
}

// schema is the table's key schema, asked of the engine once.
func (v *versions) schema(r *http.Request, table string) (tableSchema, bool) {
	v.mu.Lock()
	s, ok := v.schemas[table]
	v.mu.Unlock()
	if ok {
		return s, true
	}
	body, _ := json.Marshal(map[string]string{"TableName": table})
	ans := forward(v.a.engine, request(r, "DynamoDB_20120810.DescribeTable", body), body)
	type keyElement struct{ AttributeName string }
	var out struct {
		Table struct {
			KeySchema              []keyElement
			GlobalSecondaryIndexes []struct {
				IndexName string
				KeySchema []keyElement
			}
		}
	}
	if !ans.ok() || json.Unmarshal(ans.body, &out) != nil || len(out.Table.KeySchema) == 0 {
		return s, false
	}
	s = tableSchema{indexes: map[string][]string{}}
	for _, k := range out.Table.KeySchema {
		s.key = append(s.key, k.AttributeName)
	}
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		for _, k := range ix.KeySchema {
			s.indexes[ix.IndexName] = append(s.indexes[ix.IndexName], k.AttributeName)
		}
	}
	v.mu.Lock()
	v.schemas[table] = s
	v.mu.Unlock()
	return s, true
}

// itemID names an item: its table and key, in a stable order.
func itemID(table string, key map[string]json.RawMessage) string {
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(table)
	for _, n := range names {
		b.WriteString("\x00" + n + "=" + compact(key[n]))
	}
	return b.String()
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
