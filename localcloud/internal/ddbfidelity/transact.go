package ddbfidelity

import (
	"encoding/json"
)

// txItem is one item of TransactWriteItems, whichever action it is.
type txItem struct {
	TableName                           string
	Key                                 item
	Item                                item
	UpdateExpression                    string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           item
	ReturnValuesOnConditionCheckFailure string
}

// transactWrite serves TransactWriteItems: stored numbers an update's
// arithmetic would take inexactly are refused, and the cancellation reasons
// of failed conditions carry the item when ReturnValuesOnConditionCheckFailure
// is ALL_OLD.
func (c *call) transactWrite() *answer {
	var tx struct {
		TransactItems []map[string]txItem
	}
	body := c.body
	if c.changed {
		body = mustJSON(c.req)
	}
	if json.Unmarshal(body, &tx) != nil {
		return c.forward()
	}
	type target struct {
		table string
		key   item
		old   bool
	}
	targets := make([]target, len(tx.TransactItems))
	seen := map[string]bool{}
	for i, ti := range tx.TransactItems {
		for action, it := range ti {
			tbl := tableNameOf(it.TableName)
			key := it.Key
			t, err := c.h.describe(c.r.Context(), tbl)
			if err != nil {
				continue // the engine names the missing table
			}
			if action == "Put" {
				if a := checkItemKeys(t, it.Item); a != nil {
					return a
				}
				if a := checkItemSize(it.Item); a != nil {
					return a
				}
				key = keyOf(it.Item, t.Keys)
				c.h.numbers.notePut(tbl, it.Item)
			}
			id := tbl + "\x00" + keyID(key, t.Keys)
			if seen[id] {
				return validation("Transaction request cannot include multiple operations on one item")
			}
			seen[id] = true
			if action == "Update" {
				if a := checkKeyUpdate(t, it.UpdateExpression, it.ExpressionAttributeNames); a != nil {
					return a
				}
				if a := c.storedArithmetic(tbl, key, it.UpdateExpression, it.ExpressionAttributeNames); a != nil {
					return a
				}
				c.h.numbers.noteUpdate(tbl, it.UpdateExpression, it.ExpressionAttributeNames, it.ExpressionAttributeValues)
			}
			targets[i] = target{table: tbl, key: key, old: it.ReturnValuesOnConditionCheckFailure == "ALL_OLD"}
		}
	}
	a := c.forward()
	if a.ok() || a.errorType() != "TransactionCanceledException" {
		return a
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(a.body, &doc) != nil {
		return a
	}
	var reasons []map[string]json.RawMessage
	if json.Unmarshal(doc["CancellationReasons"], &reasons) != nil || len(reasons) != len(targets) {
		return a
	}
	changed := false
	for i, r := range reasons {
		var code string
		_ = json.Unmarshal(r["Code"], &code)
		if code != "ConditionalCheckFailed" || !targets[i].old || r["Item"] != nil || len(targets[i].key) == 0 {
			continue
		}
		if old, ok := c.read(targets[i].table, targets[i].key); ok && old != nil {
			r["Item"], _ = json.Marshal(old)
			changed = true
		}
	}
	if !changed {
		return a
	}
	c.h.stats.correct("ReturnValuesOnConditionCheckFailure")
	return withField(a, "CancellationReasons", reasons)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
