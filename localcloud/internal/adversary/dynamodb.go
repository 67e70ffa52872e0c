package adversary

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// dataPlane are the DynamoDB calls on items, which DynamoDB throttles.
var dataPlane = map[string]bool{
	"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "Scan": true,
	"BatchGetItem": true, "BatchWriteItem": true, "TransactGetItems": true, "TransactWriteItems": true,
}

// throttles are the errors DDBThrottle answers with, before the work: each
// says the call was not carried out, and the SDKs retry each.
var throttles = []struct {
	status        int
	code, message string
}{
	{400, "ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."},
	{400, "ThrottlingException", "Rate of requests exceeds the allowed throughput."},
	{400, "RequestLimitExceeded", "Throughput exceeds the current throughput limit for your account. Please contact AWS Support at https://aws.amazon.com/support request a limit increase"},
	{500, "InternalServerError", "Internal server error"},
}

// refuseDynamoDB answers DDBThrottle, DDBTransactionConflict and
// DDBWriteConflict: errors DynamoDB answers before it writes anything.
func (a *Adversary) refuseDynamoDB(c *call) *answer {
	if !dataPlane[c.operation] {
		return nil
	}
	if a.Decide(DDBThrottle) {
		t := throttles[a.Pick(DDBThrottle, len(throttles))]
		a.Count(DDBThrottle)
		return awsError(c, t.status, t.code, t.message)
	}
	switch c.operation {
	case "TransactWriteItems":
		var in struct{ TransactItems []json.RawMessage }
		if json.Unmarshal(c.body, &in) != nil || len(in.TransactItems) == 0 || !a.Decide(DDBTransactionConflict) {
			return nil
		}
		a.Count(DDBTransactionConflict)
		return transactionConflict(c, len(in.TransactItems), a.Pick(DDBTransactionConflict, len(in.TransactItems)))
	case "PutItem", "UpdateItem", "DeleteItem":
		if !a.Decide(DDBWriteConflict) {
			return nil
		}
		a.Count(DDBWriteConflict)
		return awsError(c, http.StatusBadRequest, "TransactionConflictException",
			"Transaction is ongoing for the item")
	}
	return nil
}

// transactionConflict is DynamoDB's cancellation of a transaction of n items
// whose item conflicted met another transaction: TransactionConflict for it,
// None for the others.
func transactionConflict(c *call, n, conflicted int) *answer {
	reasons := make([]map[string]string, n)
	codes := make([]string, n)
	for i := range reasons {
		reasons[i], codes[i] = map[string]string{"Code": "None"}, "None"
		if i == conflicted {
			reasons[i] = map[string]string{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
			codes[i] = "TransactionConflict"
		}
	}
	body, _ := json.Marshal(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", ")),
		"CancellationReasons": reasons,
	})
	h := jsonHeader()
	h.Set("X-Amzn-Errortype", "TransactionCanceledException")
	return &answer{status: http.StatusBadRequest, header: h, body: body}
}

// getItem answers DDBStaleRead: a GetItem without ConsistentRead of an item
// written within the staleness window may get the item as it was before
// that write (or no item, if the write created it). A GetItem with a
// projection is not made stale (the earlier version would have to be
// projected).
func (a *Adversary) getItem(next http.Handler, c *call) *answer {
	var in struct {
		TableName                             string
		Key                                   map[string]json.RawMessage
		ConsistentRead                        bool
		ProjectionExpression, AttributesToGet json.RawMessage
	}
	if a.Rate(DDBStaleRead) == 0 || json.Unmarshal(c.body, &in) != nil || in.ConsistentRead ||
		in.ProjectionExpression != nil || in.AttributesToGet != nil {
		return forward(next, c.r, c.body)
	}
	prev, recent := a.versions.recent(itemID(in.TableName, in.Key))
	if !recent || !a.Decide(DDBStaleRead) {
		return forward(next, c.r, c.body)
	}
	a.Count(DDBStaleRead)
	body := []byte("{}")
	if prev != nil {
		body, _ = json.Marshal(map[string]json.RawMessage{"Item": prev})
	}
	return &answer{status: http.StatusOK, header: jsonHeader(), body: body}
}

// readMany answers a Query or Scan as of a moment ago. Of a global
// secondary index (DDBIndexLag): the index has not yet seen some of the
// table's writes of the staleness window. Of the table itself without
// ConsistentRead (DDBStaleRead): some of its items are read from a copy
// that missed their latest write. Either way an item the write created is
// missing, and an item the write changed shows its earlier version (in the
// attributes the answer projects) or, from an index, is missing when that
// version was not under the same index key. Items a recent write deleted
// are not brought back: the adversary does not know whether they matched
// the query. A local index is as consistent as its table.
func (a *Adversary) readMany(next http.Handler, c *call) *answer {
	var in struct {
		TableName, IndexName string
		ConsistentRead       bool
	}
	if json.Unmarshal(c.body, &in) != nil || in.ConsistentRead {
		return forward(next, c.r, c.body)
	}
	b := DDBStaleRead
	if in.IndexName != "" {
		b = DDBIndexLag
	}
	if a.Rate(b) == 0 {
		return forward(next, c.r, c.body)
	}
	ans := forward(next, c.r, c.body)
	if !ans.ok() {
		return ans
	}
	schema, ok := a.versions.schema(c.r, in.TableName)
	indexKey, isGlobal := schema.indexes[in.IndexName]
	if !ok || (in.IndexName != "" && !isGlobal) {
		return ans
	}
	var out map[string]json.RawMessage
	var items []map[string]json.RawMessage
	if json.Unmarshal(ans.body, &out) != nil || json.Unmarshal(out["Items"], &items) != nil {
		return ans
	}
	kept := items[:0]
	changed := false
	for _, item := range items {
		prev, recent := a.versions.recent(itemID(in.TableName, project(item, schema.key)))
		if !recent || !a.Decide(b) {
			kept = append(kept, item)
			continue
		}
		a.Count(b)
		changed = true
		var before map[string]json.RawMessage
		if prev == nil || json.Unmarshal(prev, &before) != nil || !sameValues(before, item, indexKey) {
			continue // not yet there, or not yet under this index key
		}
		old := map[string]json.RawMessage{}
		for name := range item {
			if v, ok := before[name]; ok {
				old[name] = v
			}
		}
		kept = append(kept, old)
	}
	if !changed {
		return ans
	}
	out["Items"], _ = json.Marshal(kept)
	out["Count"], _ = json.Marshal(len(kept))
	ans.body, _ = json.Marshal(out)
	return ans
}

// project is item's attributes named in names.
func project(item map[string]json.RawMessage, names []string) map[string]json.RawMessage {
	key := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		if v, ok := item[n]; ok {
			key[n] = v
		}
	}
	return key
}

func sameValues(a, b map[string]json.RawMessage, names []string) bool {
	for _, n := range names {
		va, oka := a[n]
		vb, okb := b[n]
		if oka != okb || compact(va) != compact(vb) {
			return false
		}
	}
	return true
}

// write carries out a write, and for DDBStaleRead and DDBIndexLag keeps
// each written item's version before it (read consistently from the engine
// just before) with the time of the write.
func (a *Adversary) write(next http.Handler, c *call) *answer {
	if a.Rate(DDBStaleRead) == 0 && a.Rate(DDBIndexLag) == 0 {
		return forward(next, c.r, c.body)
	}
	targets := a.versions.targets(c)
	before := make([]json.RawMessage, len(targets))
	for i, t := range targets {
		before[i] = a.versions.read(c.r, t.table, t.key)
	}
	ans := forward(next, c.r, c.body)
	if ans.ok() {
		for i, t := range targets {
			a.versions.wrote(itemID(t.table, t.key), before[i])
		}
	}
	return ans
}
