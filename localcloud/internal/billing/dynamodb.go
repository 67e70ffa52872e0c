package billing

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/clubdev/club/localcloud/internal/httptee"
)

type keyRef struct {
	TableName string          `json:"TableName"`
	Key       json.RawMessage `json:"Key"`
}

type writeRequest struct {
	TableName      string          `json:"TableName"`
	Item           Item            `json:"Item"`
	Key            json.RawMessage `json:"Key"`
	ConsistentRead bool            `json:"ConsistentRead"`
	TransactItems  []struct {
		Put            *writeRequest `json:"Put"`
		Update         *keyRef       `json:"Update"`
		Delete         *keyRef       `json:"Delete"`
		ConditionCheck *keyRef       `json:"ConditionCheck"`
		Get            *keyRef       `json:"Get"`
	} `json:"TransactItems"`
	RequestItems map[string]json.RawMessage `json:"RequestItems"`
}

type batchWrite []struct {
	PutRequest    *struct{ Item Item }           `json:"PutRequest"`
	DeleteRequest *struct{ Key json.RawMessage } `json:"DeleteRequest"`
}

type batchGet struct {
	Keys           []json.RawMessage `json:"Keys"`
	ConsistentRead bool              `json:"ConsistentRead"`
}

// writeImages are the items a write touches as they were before it: the
// items it deletes or checks (their size is what they are billed), and
// every item it writes in a table with global secondary indexes (to price
// the index writes, indexed); and, once read, as they are after it.
type writeImages struct {
	before  map[string]Item
	indexed []keyRef
	after   map[string]Item
}

func refID(table string, key json.RawMessage) string { return table + "\x00" + string(key) }

func (w *writeImages) size(table string, key json.RawMessage) int {
	if w == nil {
		return 0
	}
	return ItemSize(w.before[refID(table, key)])
}

// imagesBefore reads the items a write touches, before it runs.
func (m *Meter) imagesBefore(operation string, body []byte) *writeImages {
	var req writeRequest
	switch operation {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		if json.Unmarshal(body, &req) != nil {
			return nil
		}
	default:
		return nil
	}
	w := &writeImages{before: map[string]Item{}}
	read := func(k keyRef) {
		if _, done := w.before[refID(k.TableName, k.Key)]; !done {
			w.before[refID(k.TableName, k.Key)] = m.image(k)
		}
	}
	// written notes an item a write puts, updates or deletes: read when
	// its table has indexes.
	written := func(table string, key json.RawMessage, item Item) {
		s := m.shape(table)
		if s == nil || len(s.indexes) == 0 {
			return
		}
		if key == nil {
			if key = s.keyOf(item); key == nil {
				return
			}
		}
		k := keyRef{table, key}
		read(k)
		w.indexed = append(w.indexed, k)
	}
	switch operation {
	case "PutItem":
		written(req.TableName, nil, req.Item)
	case "UpdateItem":
		written(req.TableName, req.Key, nil)
	case "DeleteItem":
		read(keyRef{req.TableName, req.Key})
		written(req.TableName, req.Key, nil)
	case "TransactWriteItems":
		for _, ti := range req.TransactItems {
			switch {
			case ti.Put != nil:
				written(ti.Put.TableName, nil, ti.Put.Item)
			case ti.Update != nil:
				written(ti.Update.TableName, ti.Update.Key, nil)
			case ti.Delete != nil:
				read(*ti.Delete)
				written(ti.Delete.TableName, ti.Delete.Key, nil)
			case ti.ConditionCheck != nil:
				read(*ti.ConditionCheck)
			}
		}
	case "BatchWriteItem":
		for table, raw := range req.RequestItems {
			var ws batchWrite
			_ = json.Unmarshal(raw, &ws)
			for _, bw := range ws {
				switch {
				case bw.PutRequest != nil:
					written(table, nil, bw.PutRequest.Item)
				case bw.DeleteRequest != nil:
					read(keyRef{table, bw.DeleteRequest.Key})
					written(table, bw.DeleteRequest.Key, nil)
				}
			}
		}
	}
	return w
}

// indexWrites adds to line the index write units of a write that
// succeeded: each indexed item it touched, as it was before and after.
func (m *Meter) indexWrites(line *Line, w *writeImages) {
	for _, k := range w.indexed {
		if s := m.shape(k.TableName); s != nil {
			line.IndexWriteUnits += s.indexWriteUnits(w.before[refID(k.TableName, k.Key)], m.imageAfter(w, k))
		}
	}
}

// imageAfter is the item as the engine holds it after the write, read once
// per write (an updated item's size and its index entries both need it).
func (m *Meter) imageAfter(w *writeImages, k keyRef) Item {
	if w == nil {
		return m.image(k)
	}
	id := refID(k.TableName, k.Key)
	if it, ok := w.after[id]; ok {
		return it
	}
	if w.after == nil {
		w.after = map[string]Item{}
	}
	it := m.image(k)
	w.after[id] = it
	return it
}

// billed says whether AWS bills a DynamoDB answer: a success, or a write
// refused by its condition.
func billed(tee *httptee.Writer) bool {
	if tee.Status() == http.StatusOK {
		return true
	}
	if tee.Status() != http.StatusBadRequest {
		return false
	}
	b := tee.Body.Bytes()
	return bytes.Contains(b, []byte("ConditionalCheckFailed")) || bytes.Contains(b, []byte("TransactionCanceled"))
}

// dynamoDB fills line with the units of one DynamoDB call.
func (m *Meter) dynamoDB(line *Line, body []byte, tee *httptee.Writer, before *writeImages) {
	if !billed(tee) {
		return
	}
	var req writeRequest
	if json.Unmarshal(body, &req) != nil {
		return
	}
	answer := tee.Body.Bytes()
	ok := tee.Status() == http.StatusOK
	switch line.Operation {
	case "PutItem":
		line.WriteUnits, line.Items = WriteUnits(ItemSize(req.Item)), 1
	case "UpdateItem":
		line.WriteUnits, line.Items = WriteUnits(ItemSize(m.imageAfter(before, keyRef{req.TableName, req.Key}))), 1
	case "DeleteItem":
		line.WriteUnits, line.Items = WriteUnits(before.size(req.TableName, req.Key)), 1
	case "TransactWriteItems":
		for _, ti := range req.TransactItems {
			size := 0
			switch {
			case ti.Put != nil:
				size = ItemSize(ti.Put.Item)
			case ti.Update != nil:
				size = ItemSize(m.imageAfter(before, *ti.Update))
			case ti.Delete != nil:
				size = before.size(ti.Delete.TableName, ti.Delete.Key)
			case ti.ConditionCheck != nil:
				size = before.size(ti.ConditionCheck.TableName, ti.ConditionCheck.Key)
			}
			line.WriteUnits += 2 * WriteUnits(size)
			line.Items++
			line.TransactionItems++
		}
	case "BatchWriteItem":
		unprocessed := 0
		var out struct{ UnprocessedItems map[string]batchWrite }
		if ok && json.Unmarshal(answer, &out) == nil {
			for _, ws := range out.UnprocessedItems {
				unprocessed += len(ws)
			}
		}
		var units []float64
		for table, raw := range req.RequestItems {
			var ws batchWrite
			_ = json.Unmarshal(raw, &ws)
			for _, w := range ws {
				switch {
				case w.PutRequest != nil:
					units = append(units, WriteUnits(ItemSize(w.PutRequest.Item)))
				case w.DeleteRequest != nil:
					units = append(units, WriteUnits(before.size(table, w.DeleteRequest.Key)))
				}
			}
		}
		// Unprocessed items are not billed; they are taken as the
		// smallest ones (every item of the product is under 1 KB).
		for _, u := range units[:max(0, len(units)-unprocessed)] {
			line.WriteUnits += u
			line.Items++
		}
	case "GetItem":
		var out struct{ Item Item }
		_ = json.Unmarshal(answer, &out)
		line.ReadUnits, line.Items = ReadUnits(ItemSize(out.Item), req.ConsistentRead), 1
	case "Query", "Scan":
		var out struct{ Items []Item }
		_ = json.Unmarshal(answer, &out)
		size := 0
		for _, it := range out.Items {
			size += ItemSize(it)
		}
		line.ReadUnits, line.Items = ReadUnits(size, req.ConsistentRead), int64(len(out.Items))
	case "BatchGetItem":
		var out struct {
			Responses       map[string][]Item
			UnprocessedKeys map[string]batchGet
		}
		_ = json.Unmarshal(answer, &out)
		for table, raw := range req.RequestItems {
			var g batchGet
			_ = json.Unmarshal(raw, &g)
			found := out.Responses[table]
			missing := len(g.Keys) - len(found) - len(out.UnprocessedKeys[table].Keys)
			for _, it := range found {
				line.ReadUnits += ReadUnits(ItemSize(it), g.ConsistentRead)
			}
			line.ReadUnits += float64(max(missing, 0)) * ReadUnits(0, g.ConsistentRead)
			line.Items += int64(len(found) + max(missing, 0))
		}
	case "TransactGetItems":
		var out struct{ Responses []struct{ Item Item } }
		_ = json.Unmarshal(answer, &out)
		for i := range req.TransactItems {
			size := 0
			if i < len(out.Responses) {
				size = ItemSize(out.Responses[i].Item)
			}
			line.ReadUnits += 2 * ReadUnits(size, true)
			line.Items++
			line.TransactionItems++
		}
	}
	if ok && before != nil {
		m.indexWrites(line, before)
	}
}

// sqsUnits fills line with the billed requests of one SQS call (JSON
// protocol).
func sqsUnits(line *Line, body []byte, tee *httptee.Writer) {
	type message struct {
		MessageBody       string          `json:"MessageBody"`
		Body              string          `json:"Body"`
		MessageAttributes json.RawMessage `json:"MessageAttributes"`
	}
	size := 0
	switch line.Operation {
	case "SendMessage":
		var m message
		_ = json.Unmarshal(body, &m)
		size = len(m.MessageBody) + len(m.MessageAttributes)
	case "SendMessageBatch":
		var in struct{ Entries []message }
		_ = json.Unmarshal(body, &in)
		for _, m := range in.Entries {
			size += len(m.MessageBody) + len(m.MessageAttributes)
		}
	case "ReceiveMessage":
		var out struct{ Messages []message }
		_ = json.Unmarshal(tee.Body.Bytes(), &out)
		for _, m := range out.Messages {
			size += len(m.Body) + len(m.MessageAttributes)
		}
	}
	line.Billed = Chunks(size)
}

// snsUnits are the billed publishes of one SNS call (Query protocol): the
// messages and attribute values of a Publish or of every entry of a
// PublishBatch, per 64 KB; any other call is one request.
func snsUnits(operation string, body []byte) int64 {
	if operation != "Publish" && operation != "PublishBatch" {
		return 1
	}
	size := 0
	for _, field := range strings.Split(string(body), "&") {
		name, value, _ := strings.Cut(field, "=")
		if strings.HasSuffix(name, "Message") || (strings.Contains(name, "MessageAttributes") && strings.Contains(name, "Value")) {
			size += queryUnescapedLen(value)
		}
	}
	return Chunks(size)
}
