package ddbfidelity

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
)

// call is one request on its way through the fidelity layer.
type call struct {
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	op   string
	body []byte
	req  map[string]json.RawMessage
	// changed: req differs from body, which is forwarded as it came
	// otherwise.
	changed bool
	// arns: the table ARNs RequestItems gave, by table name, for the
	// answer's maps keyed by table.
	arns map[string]string
}

// legacy are the legacy parameters, in the order they are checked.
var legacy = []string{"Expected", "AttributeUpdates", "QueryFilter", "ScanFilter", "KeyConditions", "ConditionalOperator", "AttributesToGet"}

func (c *call) serve() {
	if err := json.Unmarshal(c.body, &c.req); err != nil || c.req == nil {
		// Not ours to judge: the engine answers malformed requests.
		c.h.forward(c.r, c.body).write(c.w)
		return
	}
	if a := c.check(); a != nil {
		a.write(c.w)
		return
	}
	c.tableARNs()
	var a *answer
	switch c.op {
	case "Query", "Scan":
		a = c.queryOrScan()
	case "GetItem":
		a = c.getItem()
	case "PutItem", "UpdateItem", "DeleteItem":
		a = c.write()
	case "BatchWriteItem":
		a = c.batchWrite()
	case "TransactWriteItems":
		a = c.transactWrite()
	case "CreateTable":
		if a = c.forward(); a.ok() {
			c.h.numbers.created(c.tableName())
		}
	case "DeleteTable", "UpdateTable":
		c.h.tables.forget(c.tableName())
		if c.op == "DeleteTable" {
			c.h.numbers.dropped(c.tableName())
		}
		a = c.forward()
	case "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction":
		// PartiQL writes are not read here: no table's numbers are known
		// any more.
		c.h.numbers.forgetAll()
		a = c.forward()
	default:
		a = c.forward()
	}
	if c.arns != nil {
		a = c.keyedByARN(a)
	}
	a.write(c.w)
}

func (c *call) forward() *answer {
	if !c.changed {
		return c.h.forward(c.r, c.body)
	}
	b, err := json.Marshal(c.req)
	if err != nil {
		return validation(err.Error())
	}
	return c.h.forward(c.r, b)
}

func (c *call) str(name string) string {
	var s string
	_ = json.Unmarshal(c.req[name], &s)
	return s
}

func (c *call) set(name string, v any) {
	b, _ := json.Marshal(v)
	c.req[name] = b
	c.changed = true
}

func (c *call) del(name string) {
	if _, ok := c.req[name]; ok {
		delete(c.req, name)
		c.changed = true
	}
}

func (c *call) tableName() string { return tableNameOf(c.str("TableName")) }

func (c *call) names() map[string]string {
	var m map[string]string
	_ = json.Unmarshal(c.req["ExpressionAttributeNames"], &m)
	return m
}

func (c *call) values() item {
	var m item
	_ = json.Unmarshal(c.req["ExpressionAttributeValues"], &m)
	return m
}

// refuse counts and returns the local cloud's refusal of feature.
func (c *call) refuse(feature, why string) *answer {
	c.h.stats.refuse(feature)
	return refusal(feature, why)
}

// check refuses what the engine would carry out otherwise, before anything
// reaches it.
func (c *call) check() *answer {
	reqs := []map[string]json.RawMessage{c.req}
	if c.op == "TransactWriteItems" || c.op == "TransactGetItems" {
		var tx struct {
			TransactItems []map[string]map[string]json.RawMessage
		}
		_ = json.Unmarshal(c.body, &tx)
		for _, ti := range tx.TransactItems {
			for _, r := range ti {
				reqs = append(reqs, r)
			}
		}
	}
	if c.op == "BatchGetItem" {
		var bg struct {
			RequestItems map[string]map[string]json.RawMessage
		}
		_ = json.Unmarshal(c.body, &bg)
		for _, r := range bg.RequestItems {
			reqs = append(reqs, r)
		}
	}
	for _, r := range reqs {
		for _, p := range legacy {
			if _, ok := r[p]; ok {
				return c.refuse("the legacy parameter "+p,
					"the engines do not carry out DynamoDB's legacy conditional parameters as AWS does; use the expression parameters (ConditionExpression, UpdateExpression, KeyConditionExpression, FilterExpression, ProjectionExpression)")
			}
		}
		if a := c.checkExpressions(r); a != nil {
			return a
		}
	}
	return nil
}

// expressionFields are the request fields that hold expressions.
var expressionFields = []string{"ConditionExpression", "UpdateExpression", "ProjectionExpression", "KeyConditionExpression", "FilterExpression"}

// checkUnused is DynamoDB's refusal of expression attribute names and
// values that no expression of the request uses.
func checkUnused(r map[string]json.RawMessage) *answer {
	var exprs []string
	for _, f := range expressionFields {
		var e string
		_ = json.Unmarshal(r[f], &e)
		exprs = append(exprs, e)
	}
	for _, p := range []struct {
		field string
		re    *regexp.Regexp
	}{{"ExpressionAttributeNames", nameToken}, {"ExpressionAttributeValues", valueToken}} {
		var given map[string]json.RawMessage
		if json.Unmarshal(r[p.field], &given) != nil || len(given) == 0 {
			continue
		}
		used := tokens(p.re, exprs...)
		var unused []string
		for k := range given {
			if !used[k] {
				unused = append(unused, k)
			}
		}
		if len(unused) > 0 {
			sort.Strings(unused)
			return validation("Value provided in " + p.field + " unused in expressions: keys: {" + strings.Join(unused, ", ") + "}")
		}
	}
	return nil
}

func (c *call) checkExpressions(r map[string]json.RawMessage) *answer {
	if a := checkUnused(r); a != nil {
		return a
	}
	p := c.h.profile
	var upd, proj string
	_ = json.Unmarshal(r["UpdateExpression"], &upd)
	_ = json.Unmarshal(r["ProjectionExpression"], &proj)
	if upd != "" {
		if p.NoListAppend && listAppend.MatchString(upd) {
			return c.refuse("list_append in an UpdateExpression", p.Engine+" leaves the attribute null instead of appending")
		}
		if p.NoListElementUpdates && listIndex.MatchString(upd) {
			return c.refuse("a list element (path[n]) in an UpdateExpression", p.Engine+" ignores SET and REMOVE of a list element")
		}
		var vals item
		_ = json.Unmarshal(r["ExpressionAttributeValues"], &vals)
		for _, add := range p.floatClauses() {
			values, _ := arithmetic(upd, add)
			for _, v := range values {
				if !exactNumber(vals[v]) {
					return c.refuse("decimal arithmetic in an UpdateExpression", p.Engine+" adds and subtracts numbers in binary floating point (0.1 + 0.2 = 0.30000000000000004); integers up to 2^53 are exact and accepted")
				}
			}
		}
	}
	if proj != "" && p.NoNestedProjection && nested(proj) && c.op != "GetItem" && c.op != "Query" && c.op != "Scan" {
		return c.refuse("a nested ProjectionExpression (m.a, l[1]) in "+c.op, p.Engine+" returns nothing for paths below the top level")
	}
	return nil
}

// exactNumber says whether an operand is a number that binary floating
// point holds exactly (anything else is not a number, which the engine
// refuses itself).
func exactNumber(v json.RawMessage) bool {
	var av struct{ N *string }
	if json.Unmarshal(v, &av) != nil || av.N == nil {
		return true
	}
	return exactInFloat(*av.N)
}

// tableARNs gives the engine table names where the request gives ARNs.
func (c *call) tableARNs() {
	if t := c.str("TableName"); t != "" && t != tableNameOf(t) {
		c.set("TableName", tableNameOf(t))
		c.h.stats.correct("table ARN as TableName")
	}
	if raw, ok := c.req["RequestItems"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			changed := false
			for k, v := range m {
				if n := tableNameOf(k); n != k {
					delete(m, k)
					m[n] = v
					changed = true
					if c.arns == nil {
						c.arns = map[string]string{}
					}
					c.arns[n] = k
				}
			}
			if changed {
				c.set("RequestItems", m)
				c.h.stats.correct("table ARN as TableName")
			}
		}
	}
	if raw, ok := c.req["TransactItems"]; ok && strings.Contains(string(raw), "arn:") {
		var items []map[string]map[string]json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			changed := false
			for _, ti := range items {
				for _, r := range ti {
					var t string
					if json.Unmarshal(r["TableName"], &t) == nil && t != tableNameOf(t) {
						r["TableName"], _ = json.Marshal(tableNameOf(t))
						changed = true
					}
				}
			}
			if changed {
				c.set("TransactItems", items)
				c.h.stats.correct("table ARN as TableName")
			}
		}
	}
}

// keyedByARN gives the answer's maps keyed by table (Responses,
// UnprocessedItems, UnprocessedKeys) the keys the request used: the ARNs.
func (c *call) keyedByARN(a *answer) *answer {
	var m map[string]json.RawMessage
	if !a.ok() || json.Unmarshal(a.body, &m) != nil {
		return a
	}
	for _, field := range []string{"Responses", "UnprocessedItems", "UnprocessedKeys", "ItemCollectionMetrics"} {
		var byTable map[string]json.RawMessage
		if json.Unmarshal(m[field], &byTable) != nil || byTable == nil {
			continue
		}
		for name, arn := range c.arns {
			if v, ok := byTable[name]; ok {
				delete(byTable, name)
				byTable[arn] = v
			}
		}
		m[field], _ = json.Marshal(byTable)
	}
	b, _ := json.Marshal(m)
	return a.withBody(b)
}
