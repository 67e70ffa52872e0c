package billing

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
)

// A table's key attributes and global secondary indexes, as DescribeTable
// gives them: what decides whether a write also writes an index.
type tableShape struct {
	keys    []string
	indexes []indexShape
}

type indexShape struct {
	keys []string
	// all: every attribute is projected; else the keys (the table's and
	// the index's) and include.
	all     bool
	include []string
}

// shape returns the table's shape, asked of the engine once per table; nil
// when the engine cannot tell (the table is then taken to have no index,
// and asked again next time).
func (m *Meter) shape(table string) *tableShape {
	m.mu.Lock()
	s, ok := m.shapes[table]
	m.mu.Unlock()
	if ok {
		return s
	}
	var out struct {
		Table struct {
			KeySchema              []struct{ AttributeName string }
			GlobalSecondaryIndexes []struct {
				KeySchema  []struct{ AttributeName string }
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	if !m.call("DescribeTable", map[string]any{"TableName": table}, &out) || len(out.Table.KeySchema) == 0 {
		return nil
	}
	s = &tableShape{}
	for _, k := range out.Table.KeySchema {
		s.keys = append(s.keys, k.AttributeName)
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		ix := indexShape{all: g.Projection.ProjectionType == "ALL", include: g.Projection.NonKeyAttributes}
		for _, k := range g.KeySchema {
			ix.keys = append(ix.keys, k.AttributeName)
		}
		s.indexes = append(s.indexes, ix)
	}
	m.mu.Lock()
	m.shapes[table] = s
	m.mu.Unlock()
	return s
}

// indexWriteUnits are the write units a table write costs in the table's
// global secondary indexes, from the item before and after it (nil when
// absent), by AWS's rules: an item entering an index is one write of its
// projection, leaving it one write, changing an index key two (the old
// entry deleted, the new one put), changing only projected attributes one;
// an item in no index before or after costs nothing. Index writes are
// billed per 1 KB of the projection, as plain writes, also when the table
// write was part of a transaction.
func (s *tableShape) indexWriteUnits(before, after Item) float64 {
	var units float64
	for _, ix := range s.indexes {
		in, out := hasAll(before, ix.keys), hasAll(after, ix.keys)
		switch {
		case in && out:
			if !sameValues(before, after, ix.keys) {
				units += WriteUnits(s.projectedSize(ix, before)) + WriteUnits(s.projectedSize(ix, after))
			} else if !s.sameProjection(ix, before, after) {
				units += WriteUnits(s.projectedSize(ix, after))
			}
		case in:
			units += WriteUnits(s.projectedSize(ix, before))
		case out:
			units += WriteUnits(s.projectedSize(ix, after))
		}
	}
	return units
}

// projected returns the attributes of item the index holds.
func (s *tableShape) projected(ix indexShape, item Item) Item {
	if ix.all {
		return item
	}
	out := Item{}
	for _, names := range [][]string{s.keys, ix.keys, ix.include} {
		for _, n := range names {
			if v, ok := item[n]; ok {
				out[n] = v
			}
		}
	}
	return out
}

func (s *tableShape) projectedSize(ix indexShape, item Item) int {
	return ItemSize(s.projected(ix, item))
}

func (s *tableShape) sameProjection(ix indexShape, before, after Item) bool {
	b, a := s.projected(ix, before), s.projected(ix, after)
	if len(b) != len(a) {
		return false
	}
	for n := range b {
		if _, ok := a[n]; !ok || !sameValues(b, a, []string{n}) {
			return false
		}
	}
	return true
}

func hasAll(item Item, names []string) bool {
	if item == nil || len(names) == 0 {
		return false
	}
	for _, n := range names {
		if _, ok := item[n]; !ok {
			return false
		}
	}
	return true
}

// sameValues compares attribute values as the engine wrote them (both
// images come from the engine's own encoding).
func sameValues(a, b Item, names []string) bool {
	for _, n := range names {
		if !bytes.Equal(a[n], b[n]) {
			return false
		}
	}
	return true
}

// keyOf is the key of item in table (its key attributes), for reading it
// back; nil when the item lacks one.
func (s *tableShape) keyOf(item Item) json.RawMessage {
	key := Item{}
	for _, n := range s.keys {
		v, ok := item[n]
		if !ok {
			return nil
		}
		key[n] = v
	}
	raw, _ := json.Marshal(key)
	return raw
}

// image reads an item from the engine (strongly consistent, without being
// metered); nil when it is missing or unreadable.
func (m *Meter) image(k keyRef) Item {
	var out struct{ Item Item }
	if !m.call("GetItem", map[string]any{"TableName": k.TableName, "Key": k.Key, "ConsistentRead": true}, &out) {
		return nil
	}
	return out.Item
}

// call makes one DynamoDB call on the engine, past the meter, and decodes
// its answer into out; false when it failed.
func (m *Meter) call(operation string, in, out any) bool {
	if m.engine == nil {
		return false
	}
	body, _ := json.Marshal(in)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+operation)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=billing/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	rec := httptest.NewRecorder()
	m.engine.ServeHTTP(rec, req)
	return rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), out) == nil
}
