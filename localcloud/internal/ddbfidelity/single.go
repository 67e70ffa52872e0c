package ddbfidelity

import (
	"encoding/json"
	"strings"
)

// wantsCapacity says whether the request asks for ConsumedCapacity.
func (c *call) wantsCapacity() string {
	m := c.str("ReturnConsumedCapacity")
	if m == "TOTAL" || m == "INDEXES" {
		return m
	}
	return ""
}

// refuseCapacity refuses ReturnConsumedCapacity where the layer cannot
// compute it: on a table with secondary indexes (their units are part of
// the total).
func (c *call) refuseCapacity(t *tableDesc) *answer {
	if len(t.Indexes) > 0 {
		return c.refuse("ReturnConsumedCapacity on a table with secondary indexes",
			"the local cloud computes consumed capacity for the table's own reads and writes only")
	}
	return nil
}

// withField returns the answer with a top-level field set.
func withField(a *answer, name string, v any) *answer {
	var m map[string]json.RawMessage
	if json.Unmarshal(a.body, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m[name], _ = json.Marshal(v)
	b, _ := json.Marshal(m)
	return a.withBody(b)
}

func (c *call) getItem() *answer {
	t, err := c.h.describe(c.r.Context(), c.tableName())
	if err != nil {
		return c.forward()
	}
	var key item
	_ = json.Unmarshal(c.req["Key"], &key)
	if a := checkKey(t, key); a != nil {
		return a
	}
	mode := c.wantsCapacity()
	if mode != "" {
		if a := c.refuseCapacity(t); a != nil {
			return a
		}
	}
	proj := c.str("ProjectionExpression")
	var p *projection
	if c.h.profile.NoNestedProjection && nested(proj) {
		pp, ok := parseProjection(proj, c.names())
		if !ok {
			return c.forward() // the engine says what is wrong with it
		}
		p = pp
		c.del("ProjectionExpression")
		c.pruneNames()
	}
	if mode != "" || p != nil {
		// The whole item, to size it or to project it.
		c.del("ProjectionExpression")
		c.pruneNames()
	}
	a := c.forward()
	if !a.ok() || (mode == "" && p == nil) {
		return a
	}
	var out struct{ Item item }
	_ = json.Unmarshal(a.body, &out)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(a.body, &m)
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if mode != "" {
		var consistent bool
		_ = json.Unmarshal(c.req["ConsistentRead"], &consistent)
		m["ConsumedCapacity"], _ = json.Marshal(capacity(t.Name, readUnits(itemSize(out.Item), consistent), mode))
		c.h.stats.correct("ConsumedCapacity")
	}
	if out.Item != nil {
		switch {
		case p != nil:
			m["Item"], _ = json.Marshal(p.apply(out.Item))
			c.h.stats.correct("nested ProjectionExpression")
		case proj != "":
			pp, ok := parseProjection(proj, c.names())
			if ok {
				m["Item"], _ = json.Marshal(pp.apply(out.Item))
			}
		}
	}
	b, _ := json.Marshal(m)
	return a.withBody(b)
}

// pruneNames drops the ExpressionAttributeNames and Values no expression of
// the request uses any more (AWS refuses unused ones; so may an engine).
func (c *call) pruneNames() {
	var exprs []string
	for _, k := range []string{"ProjectionExpression", "KeyConditionExpression", "FilterExpression", "ConditionExpression", "UpdateExpression"} {
		if s := c.str(k); s != "" {
			exprs = append(exprs, s)
		}
	}
	usedN, usedV := tokens(nameToken, exprs...), tokens(valueToken, exprs...)
	if names := c.names(); names != nil {
		for k := range names {
			if !usedN[k] {
				delete(names, k)
			}
		}
		if len(names) == 0 {
			c.del("ExpressionAttributeNames")
		} else {
			c.set("ExpressionAttributeNames", names)
		}
	}
	if vals := c.values(); vals != nil {
		for k := range vals {
			if !usedV[k] {
				delete(vals, k)
			}
		}
		if len(vals) == 0 {
			c.del("ExpressionAttributeValues")
		} else {
			c.set("ExpressionAttributeValues", vals)
		}
	}
	if c.str("Select") == "SPECIFIC_ATTRIBUTES" && c.str("ProjectionExpression") == "" {
		c.del("Select")
	}
}

// read is a strongly consistent read of an item of the layer's own.
func (c *call) read(table string, key item) (item, bool) {
	a := c.h.engineCall(c.r.Context(), "GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	if !a.ok() {
		return nil, false
	}
	var out struct{ Item item }
	if json.Unmarshal(a.body, &out) != nil {
		return nil, false
	}
	return out.Item, true
}

// write serves PutItem, UpdateItem and DeleteItem.
func (c *call) write() *answer {
	t, err := c.h.describe(c.r.Context(), c.tableName())
	if err != nil {
		return c.forward()
	}
	var key item
	if c.op == "PutItem" {
		var it item
		_ = json.Unmarshal(c.req["Item"], &it)
		if a := checkItemKeys(t, it); a != nil {
			return a
		}
		if a := checkItemSize(it); a != nil {
			return a
		}
		key = keyOf(it, t.Keys)
	} else {
		_ = json.Unmarshal(c.req["Key"], &key)
		if a := checkKey(t, key); a != nil {
			return a
		}
	}
	if c.op == "UpdateItem" {
		if a := checkKeyUpdate(t, c.str("UpdateExpression"), c.names()); a != nil {
			return a
		}
	}
	if c.op == "UpdateItem" {
		if a := c.storedArithmetic(t.Name, key, c.str("UpdateExpression"), c.names()); a != nil {
			return a
		}
		c.h.numbers.noteUpdate(t.Name, c.str("UpdateExpression"), c.names(), c.values())
	}
	if c.op == "PutItem" {
		var it item
		_ = json.Unmarshal(c.req["Item"], &it)
		c.h.numbers.notePut(t.Name, it)
	}
	mode := c.wantsCapacity()
	var before item
	if mode != "" {
		if a := c.refuseCapacity(t); a != nil {
			return a
		}
		before, _ = c.read(t.Name, key)
	}
	a := c.forward()
	if !a.ok() {
		if a.errorType() == "ConditionalCheckFailedException" && c.str("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" {
			var e map[string]json.RawMessage
			if json.Unmarshal(a.body, &e) == nil && e["Item"] == nil {
				if old, ok := c.read(t.Name, key); ok && old != nil {
					c.h.stats.correct("ReturnValuesOnConditionCheckFailure")
					return withField(a, "Item", old)
				}
			}
		}
		return a
	}
	if mode != "" {
		after, _ := c.read(t.Name, key)
		size := max(itemSize(before), itemSize(after))
		c.h.stats.correct("ConsumedCapacity")
		return withField(a, "ConsumedCapacity", capacity(t.Name, writeUnits(size), mode))
	}
	return a
}

// storedArithmetic refuses an update whose arithmetic would take a stored
// number that binary floating point does not hold exactly. It reads the
// item first; a write between the read and the update is not seen.
func (c *call) storedArithmetic(table string, key item, upd string, names map[string]string) *answer {
	if upd == "" {
		return nil
	}
	var paths []string
	for _, add := range c.h.profile.floatClauses() {
		_, ps := arithmetic(upd, add)
		paths = append(paths, ps...)
	}
	mayHold := false
	for _, p := range paths {
		if path, ok := parsePath(p, names); ok && c.h.numbers.mayHold(table, path[0].name) {
			mayHold = true
		}
	}
	if !mayHold {
		return nil
	}
	it, ok := c.read(table, key)
	if !ok || it == nil {
		return nil
	}
	for _, p := range paths {
		path, ok := parsePath(p, names)
		if !ok {
			continue
		}
		v, ok := lookup(it, path)
		if ok && !exactNumber(v) {
			return c.refuse("decimal arithmetic in an UpdateExpression", c.h.profile.Engine+" adds and subtracts numbers in binary floating point, and "+strings.TrimSpace(p)+" holds a number that is not an integer up to 2^53")
		}
	}
	return nil
}

// batchWrite serves BatchWriteItem: the items' keys are checked, and the
// answer always has UnprocessedItems.
func (c *call) batchWrite() *answer {
	var reqs map[string][]struct {
		PutRequest    *struct{ Item item }
		DeleteRequest *struct{ Key item }
	}
	_ = json.Unmarshal(c.req["RequestItems"], &reqs)
	total := 0
	for _, ws := range reqs {
		total += len(ws)
	}
	if total > maxBatchWrite {
		return validation("Too many items requested for the BatchWriteItem call")
	}
	for table, ws := range reqs {
		t, err := c.h.describe(c.r.Context(), table)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, w := range ws {
			var a *answer
			var key item
			if w.PutRequest != nil {
				c.h.numbers.notePut(t.Name, w.PutRequest.Item)
				if a = checkItemKeys(t, w.PutRequest.Item); a == nil {
					a = checkItemSize(w.PutRequest.Item)
				}
				key = keyOf(w.PutRequest.Item, t.Keys)
			} else if w.DeleteRequest != nil {
				a = checkKey(t, w.DeleteRequest.Key)
				key = w.DeleteRequest.Key
			}
			if a != nil {
				return a
			}
			id := keyID(key, t.Keys)
			if seen[id] {
				return validation("Provided list of item keys contains duplicates")
			}
			seen[id] = true
		}
	}
	if c.wantsCapacity() != "" {
		return c.refuse("ReturnConsumedCapacity on BatchWriteItem", "the local cloud computes consumed capacity for single-item reads and writes, Query and Scan only")
	}
	a := c.forward()
	if !a.ok() {
		return a
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a.body, &m) == nil && m["UnprocessedItems"] == nil {
		c.h.stats.correct("UnprocessedItems")
		return withField(a, "UnprocessedItems", map[string]any{})
	}
	return a
}
