package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// conflicts makes concurrent DynamoDB transactions that touch one item
// collide, as DynamoDB does: a TransactWriteItems that names an item another
// transaction is still writing is cancelled with TransactionCanceledException
// and the reason TransactionConflict for that item (and None for the
// others), and the caller retries. kumo serialises transactions and never
// does this, so without it no test meets a conflict.
//
// It is off unless switched on (PUT /_club/dynamodb/conflicts): with it on,
// every transaction holds its items for HoldMS before kumo carries it out,
// which widens the window in which others collide with it. Only transactions
// collide with transactions; a single-item write during a transaction is not
// refused (DynamoDB refuses it with TransactionConflictException).
type conflicts struct {
	mu       sync.Mutex
	settings ConflictSettings
	held     map[string]bool
	// keys are each table's key attribute names, from DescribeTable.
	keys map[string][]string
	ddb  *dynamodb.Client

	transactions, conflicted int64
}

// ConflictSettings switch transaction conflicts on and size their window.
type ConflictSettings struct {
	Enabled bool `json:"enabled"`
	// HoldMS is how long a transaction holds its items before kumo carries
	// it out, in milliseconds (0 to 1,000).
	HoldMS int `json:"hold_ms"`
}

// ConflictStats count the transactions seen while conflicts were on and
// those cancelled with TransactionConflict.
type ConflictStats struct {
	Settings     ConflictSettings `json:"settings"`
	Transactions int64            `json:"transactions"`
	Conflicts    int64            `json:"conflicts"`
}

func newConflicts(kumoURL string, cfg aws.Config) *conflicts {
	cfg.BaseEndpoint = aws.String(kumoURL)
	return &conflicts{held: map[string]bool{}, keys: map[string][]string{}, ddb: dynamodb.NewFromConfig(cfg)}
}

// transactRequest is the part of a TransactWriteItems call that names items.
type transactRequest struct {
	TransactItems []map[string]struct {
		TableName string
		Key       map[string]json.RawMessage
		Item      map[string]json.RawMessage
	}
}

// serve passes a TransactWriteItems call to next unless one of its items is
// held by another transaction.
func (c *conflicts) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	on, hold := c.settings.Enabled, time.Duration(c.settings.HoldMS)*time.Millisecond
	c.mu.Unlock()
	if !on {
		next.ServeHTTP(w, r)
		return
	}
	body, ok := peekBody(w, r)
	if !ok {
		return
	}
	var in transactRequest
	if json.Unmarshal(body, &in) != nil {
		next.ServeHTTP(w, r) // kumo's to refuse
		return
	}
	items := make([]string, len(in.TransactItems))
	for i, op := range in.TransactItems {
		for _, target := range op { // one of Put, Update, Delete, ConditionCheck
			key := target.Key
			if key == nil {
				key = c.keyOf(r.Context(), target.TableName, target.Item)
			}
			items[i] = itemID(target.TableName, key)
		}
	}
	if !c.take(items) {
		c.refuse(w, items)
		return
	}
	defer c.give(items)
	if hold > 0 {
		time.Sleep(hold) // the transaction in progress, holding its items
	}
	next.ServeHTTP(w, r)
}

// take holds every item, or none if one is held already.
func (c *conflicts) take(items []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transactions++
	for _, id := range items {
		if id != "" && c.held[id] {
			c.conflicted++
			return false
		}
	}
	for _, id := range items {
		if id != "" {
			c.held[id] = true
		}
	}
	return true
}

func (c *conflicts) give(items []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range items {
		delete(c.held, id)
	}
}

// refuse answers as DynamoDB answers a transaction that met another.
func (c *conflicts) refuse(w http.ResponseWriter, items []string) {
	c.mu.Lock()
	reasons := make([]map[string]string, len(items))
	codes := make([]string, len(items))
	for i, id := range items {
		if id != "" && c.held[id] {
			reasons[i] = map[string]string{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
			codes[i] = "TransactionConflict"
		} else {
			reasons[i] = map[string]string{"Code": "None"}
			codes[i] = "None"
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", "TransactionCanceledException")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"message":             fmt.Sprintf("Transaction cancelled, please refer cancellation reasons for specific reasons [%s]", strings.Join(codes, ", ")),
		"CancellationReasons": reasons,
	})
}

// keyOf is the key of a Put's item: its table's key attributes.
func (c *conflicts) keyOf(ctx context.Context, table string, item map[string]json.RawMessage) map[string]json.RawMessage {
	c.mu.Lock()
	names, ok := c.keys[table]
	c.mu.Unlock()
	if !ok {
		out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil || out.Table == nil {
			return nil // kumo will refuse the call
		}
		for _, k := range out.Table.KeySchema {
			names = append(names, aws.ToString(k.AttributeName))
		}
		c.mu.Lock()
		c.keys[table] = names
		c.mu.Unlock()
	}
	key := map[string]json.RawMessage{}
	for _, n := range names {
		key[n] = item[n]
	}
	return key
}

// itemID names an item: its table and key, in a stable order.
func itemID(table string, key map[string]json.RawMessage) string {
	if table == "" || len(key) == 0 {
		return ""
	}
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(table)
	for _, n := range names {
		var compact bytes.Buffer
		if json.Compact(&compact, key[n]) != nil {
			compact.Write(key[n])
		}
		fmt.Fprintf(&b, "\x00%s=%s", n, compact.Bytes())
	}
	return b.String()
}

// ServeHTTP serves the switch: GET the settings and counts, PUT settings,
// DELETE to switch conflicts off.
func (c *conflicts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		var s ConflictSettings
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			writeControlError(w, http.StatusBadRequest, "invalid_settings", "a JSON object {\"enabled\": bool, \"hold_ms\": 0..1000}: "+err.Error())
			return
		}
		if s.HoldMS < 0 || s.HoldMS > 1000 {
			writeControlError(w, http.StatusBadRequest, "invalid_settings", fmt.Sprintf("hold_ms %d is outside 0..1000", s.HoldMS))
			return
		}
		c.mu.Lock()
		c.settings = s
		c.mu.Unlock()
	case http.MethodDelete:
		c.mu.Lock()
		c.settings = ConflictSettings{}
		c.mu.Unlock()
	default:
		w.Header().Set("Allow", "GET, PUT, DELETE")
		writeControlError(w, http.StatusMethodNotAllowed, "method_not_allowed", "GET, PUT or DELETE")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.snapshot())
}

func (c *conflicts) snapshot() ConflictStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConflictStats{Settings: c.settings, Transactions: c.transactions, Conflicts: c.conflicted}
}

func writeControlError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}
