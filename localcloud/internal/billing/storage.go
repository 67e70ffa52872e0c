package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
)

// StorageOverhead is the bytes DynamoDB adds to each item, and to each
// global secondary index entry, when it bills storage.
const StorageOverhead = 100

// TableStorage is what a table holds as DynamoDB bills its storage: each item
// its size (ItemSize) plus StorageOverhead, and each entry of its global
// secondary indexes its projection plus StorageOverhead.
type TableStorage struct {
	Table      string `json:"table"`
	Items      int64  `json:"items"`
	Bytes      int64  `json:"bytes"`
	IndexItems int64  `json:"index_items"`
	IndexBytes int64  `json:"index_bytes"`
	// ExpiringItems and ExpiringBytes are the items that carry the table's
	// time-to-live attribute (and their index entries' bytes): DynamoDB
	// deletes them once that time has passed.
	ExpiringItems int64 `json:"expiring_items"`
	ExpiringBytes int64 `json:"expiring_bytes"`
}

// scanPage is how many items one Scan of Storage asks for. kumo sorts a
// whole table for every page, holding the engine's lock, so a table of n
// items costs n/scanPage sorts of it: in pages of a thousand, the tables a
// throughput benchmark leaves behind took more than a minute.
var scanPage = 100_000

// Storage scans every table of the engine (past the meter, whether counting
// is on or not) and returns what each holds, sorted by table name. It stops
// between pages once ctx is done.
func (m *Meter) Storage(ctx context.Context) ([]TableStorage, error) {
	var list struct{ TableNames []string }
	if !m.call("ListTables", map[string]any{}, &list) {
		return nil, fmt.Errorf("list tables: the engine did not answer")
	}
	out := make([]TableStorage, 0, len(list.TableNames))
	for _, name := range list.TableNames {
		t, err := m.tableStorage(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out, nil
}

func (m *Meter) tableStorage(ctx context.Context, name string) (TableStorage, error) {
	t := TableStorage{Table: name}
	shape := m.shape(name)
	if shape == nil {
		return t, fmt.Errorf("describe table %s: the engine did not answer", name)
	}
	var ttl struct {
		TimeToLiveDescription struct {
			AttributeName    string
			TimeToLiveStatus string
		}
	}
	ttlAttr := ""
	if m.call("DescribeTimeToLive", map[string]any{"TableName": name}, &ttl) && ttl.TimeToLiveDescription.TimeToLiveStatus == "ENABLED" {
		ttlAttr = ttl.TimeToLiveDescription.AttributeName
	}
	var start json.RawMessage
	for {
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("scan %s: %w", name, err)
		}
		in := map[string]any{"TableName": name, "Limit": scanPage, "ConsistentRead": true}
		if start != nil {
			in["ExclusiveStartKey"] = start
		}
		var page struct {
			Items            []Item
			LastEvaluatedKey json.RawMessage
		}
		if !m.call("Scan", in, &page) {
			return t, fmt.Errorf("scan %s: the engine did not answer", name)
		}
		for _, it := range page.Items {
			bytes := int64(ItemSize(it) + StorageOverhead)
			t.Items++
			t.Bytes += bytes
			for _, ix := range shape.indexes {
				if hasAll(it, ix.keys) {
					entry := int64(shape.projectedSize(ix, it) + StorageOverhead)
					t.IndexItems++
					t.IndexBytes += entry
					bytes += entry
				}
			}
			if _, ok := it[ttlAttr]; ok && ttlAttr != "" {
				t.ExpiringItems++
				t.ExpiringBytes += bytes
			}
		}
		if len(page.LastEvaluatedKey) == 0 || string(page.LastEvaluatedKey) == "null" || len(page.Items) == 0 {
			return t, nil
		}
		start = page.LastEvaluatedKey
	}
}
