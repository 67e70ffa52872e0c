package ddbfidelity

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math/big"
	"net/http"
	"sort"
)

// queryOrScan serves Query and Scan. A read of a secondary index on an
// engine whose indexes are not sparse is read by the layer itself
// (indexRead); on a table, what the engine gets wrong about projections and
// capacity is corrected.
func (c *call) queryOrScan() *answer {
	t, err := c.h.describe(c.r.Context(), c.tableName())
	if err != nil {
		return c.forward()
	}
	if ixName := c.str("IndexName"); ixName != "" {
		ix, ok := t.Indexes[ixName]
		var consistent bool
		_ = json.Unmarshal(c.req["ConsistentRead"], &consistent)
		if ok && ix.Global && consistent {
			return validation("Consistent reads are not supported on global secondary indexes")
		}
		if ok && c.h.profile.IndexesNotSparse {
			return c.indexRead(t, ix)
		}
		if c.h.profile.IndexesNotSparse {
			return c.forward()
		}
	}
	mode := c.wantsCapacity()
	if mode != "" {
		if a := c.refuseCapacity(t); a != nil {
			return a
		}
		if c.str("FilterExpression") != "" {
			return c.refuse("ReturnConsumedCapacity on a "+c.op+" with a FilterExpression",
				"the local cloud does not see the items the filter drops, which AWS counts")
		}
	}
	proj := c.str("ProjectionExpression")
	var p *projection
	if proj != "" && (mode != "" || (c.h.profile.NoNestedProjection && nested(proj))) {
		pp, ok := parseProjection(proj, c.names())
		if !ok {
			return c.forward()
		}
		p = pp
		c.del("ProjectionExpression")
		c.pruneNames()
	}
	a := c.forward()
	if !a.ok() || (mode == "" && p == nil) {
		return a
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a.body, &m) != nil {
		return a
	}
	var items []item
	_ = json.Unmarshal(m["Items"], &items)
	if mode != "" {
		size := 0
		for _, it := range items {
			size += itemSize(it)
		}
		var consistent bool
		_ = json.Unmarshal(c.req["ConsistentRead"], &consistent)
		m["ConsumedCapacity"], _ = json.Marshal(capacity(t.Name, readUnits(size, consistent), mode))
		c.h.stats.correct("ConsumedCapacity")
	}
	if p != nil && m["Items"] != nil {
		for i := range items {
			items[i] = p.apply(items[i])
		}
		m["Items"], _ = json.Marshal(items)
		if nested(proj) {
			c.h.stats.correct("nested ProjectionExpression")
		}
	}
	b, _ := json.Marshal(m)
	return a.withBody(b)
}

// indexRead reads a secondary index as DynamoDB keeps it: only the items
// that have every key attribute of the index, in the order of its keys,
// projected as the index's Projection says, with Limit counting the items
// read from the index and LastEvaluatedKey (the table's and the index's
// keys) after the last of them.
//
// It reads the engine twice at most: every item the key condition selects,
// unfiltered (to know the index's items and their order), and, with a
// FilterExpression, the items the filter keeps. The page is then cut from
// the index's items by ExclusiveStartKey and Limit. Not reproduced: the 1
// MB page size (a page ends at Limit or at the end of the index).
func (c *call) indexRead(t *tableDesc, ix indexDesc) *answer {
	if _, ok := c.req["Segment"]; ok {
		return c.refuse("a parallel Scan (Segment) of a secondary index", c.h.profile.Engine+" does not keep indexes, and the local cloud reads them whole")
	}
	sel := c.str("Select")
	if sel == "ALL_ATTRIBUTES" && ix.Global && ix.Projection != "ALL" {
		return validation("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index " + ix.Name + " because its projection type is not ALL")
	}
	if f := c.str("FilterExpression"); f != "" && ix.Projection != "ALL" && ix.Global {
		for _, name := range topLevelNames(f, c.names()) {
			if !t.projects(ix, name) {
				return c.refuse("a FilterExpression on an attribute a "+ix.Projection+" global secondary index does not project ("+name+")",
					c.h.profile.Engine+" keeps whole items in its indexes, so the filter would see the attribute, which AWS's index does not hold")
			}
		}
	}
	mode := c.wantsCapacity()
	if mode == "INDEXES" {
		return c.refuse("ReturnConsumedCapacity INDEXES on a read of a secondary index", "the local cloud computes the total only")
	}
	ctx := c.r.Context()
	keys := append(append([]string{}, t.Keys...), ix.Keys...)

	// Every item the key condition selects, unfiltered, whole.
	read := func(withFilter bool) ([]item, *answer) {
		req := maps.Clone(c.req)
		rc := &call{h: c.h, r: c.r, op: c.op, req: req}
		for _, k := range []string{"Limit", "ExclusiveStartKey", "Select", "ProjectionExpression", "ReturnConsumedCapacity"} {
			delete(req, k)
		}
		if !withFilter {
			delete(req, "FilterExpression")
		}
		if c.op == "Scan" {
			delete(req, "IndexName") // the engine scans the table
		}
		rc.pruneNames()
		var all []item
		for {
			a := c.h.engineCall(ctx, c.op, req)
			if !a.ok() {
				return nil, a
			}
			var out struct {
				Items            []item
				LastEvaluatedKey item
			}
			if err := json.Unmarshal(a.body, &out); err != nil {
				return nil, validation(err.Error())
			}
			all = append(all, out.Items...)
			if len(out.LastEvaluatedKey) == 0 {
				return all, nil
			}
			next, _ := json.Marshal(out.LastEvaluatedKey)
			if string(next) == string(req["ExclusiveStartKey"]) {
				return nil, errorAnswer(http.StatusInternalServerError, "InternalServerError",
					"the local cloud's reading of index "+ix.Name+": the engine answered the same page twice")
			}
			req["ExclusiveStartKey"] = next
		}
	}
	all, errA := read(false)
	if errA != nil {
		return errA
	}
	var inIndex []item
	for _, it := range all {
		if hasAll(it, ix.Keys) {
			inIndex = append(inIndex, it)
		}
	}
	forward := true
	if raw, ok := c.req["ScanIndexForward"]; ok && c.op == "Query" {
		_ = json.Unmarshal(raw, &forward)
	}
	order := ix.Keys[1:] // a Query: the index's sort key
	if c.op == "Scan" {
		order = ix.Keys
	}
	order = append(append([]string{}, order...), t.Keys...)
	less := func(a, b item) int {
		for i, k := range order {
			if d := compareAV(a[k], b[k]); d != 0 {
				if i < len(order)-len(t.Keys) && !forward {
					return -d
				}
				return d
			}
		}
		return 0
	}
	sort.SliceStable(inIndex, func(i, j int) bool { return less(inIndex[i], inIndex[j]) < 0 })

	start := 0
	if raw, ok := c.req["ExclusiveStartKey"]; ok {
		var esk item
		if err := json.Unmarshal(raw, &esk); err != nil || !hasAll(esk, keys) {
			return validation("The provided starting key is invalid: The provided key element does not match the schema")
		}
		start = sort.Search(len(inIndex), func(i int) bool { return less(inIndex[i], esk) > 0 })
	}
	end := len(inIndex)
	var lek item
	var limit int
	if raw, ok := c.req["Limit"]; ok {
		_ = json.Unmarshal(raw, &limit)
	}
	if limit > 0 && start+limit <= len(inIndex) {
		end = start + limit
		lek = keyOf(inIndex[end-1], keys)
	}
	page := inIndex[start:end]

	kept := page
	if c.str("FilterExpression") != "" {
		passed, errB := read(true)
		if errB != nil {
			return errB
		}
		pass := map[string]bool{}
		for _, it := range passed {
			pass[keyID(it, t.Keys)] = true
		}
		kept = nil
		for _, it := range page {
			if pass[keyID(it, t.Keys)] {
				kept = append(kept, it)
			}
		}
	}

	projected := func(it item) item {
		if ix.Projection == "ALL" {
			return it
		}
		out := item{}
		for k, v := range it {
			if t.projects(ix, k) {
				out[k] = v
			}
		}
		return out
	}
	out := map[string]any{"Count": len(kept), "ScannedCount": len(page)}
	if lek != nil {
		out["LastEvaluatedKey"] = lek
	}
	if mode != "" {
		size := 0
		for _, it := range page {
			size += itemSize(projected(it))
		}
		var consistent bool
		_ = json.Unmarshal(c.req["ConsistentRead"], &consistent)
		out["ConsumedCapacity"] = capacity(t.Name, readUnits(size, consistent), mode)
	}
	if sel != "COUNT" {
		var p *projection
		if proj := c.str("ProjectionExpression"); proj != "" {
			pp, ok := parseProjection(proj, c.names())
			if !ok {
				return validation("Invalid ProjectionExpression: " + proj)
			}
			p = pp
		}
		items := make([]item, 0, len(kept))
		for _, it := range kept {
			switch {
			case sel == "ALL_ATTRIBUTES":
			case ix.Global || p == nil:
				it = projected(it)
			}
			if p != nil {
				it = p.apply(it)
			}
			items = append(items, it)
		}
		out["Items"] = items
	}
	c.h.stats.correct("secondary index read")
	b, _ := json.Marshal(out)
	return &answer{status: 200, header: jsonHeader(), body: b}
}

// compareAV orders two key values of one type: strings and binary by their
// bytes, numbers by value. A missing value sorts first.
func compareAV(a, b json.RawMessage) int {
	ta, va := avType(a)
	tb, vb := avType(b)
	switch {
	case ta == "" && tb == "":
		return 0
	case ta == "":
		return -1
	case tb == "":
		return 1
	}
	switch ta {
	case "N":
		x, okx := new(big.Rat).SetString(va)
		y, oky := new(big.Rat).SetString(vb)
		if okx && oky {
			return x.Cmp(y)
		}
	case "B":
		x, _ := base64.StdEncoding.DecodeString(va)
		y, _ := base64.StdEncoding.DecodeString(vb)
		return bytes.Compare(x, y)
	}
	switch {
	case va < vb:
		return -1
	case va > vb:
		return 1
	}
	return 0
}
