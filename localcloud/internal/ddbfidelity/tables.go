package ddbfidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// tableDesc is what the layer must know about a table: its keys and their
// types, and its secondary indexes with their projections.
type tableDesc struct {
	Name      string
	ARN       string
	Keys      []string          // hash, then range
	AttrTypes map[string]string // key attribute → S, N or B
	Indexes   map[string]indexDesc
}

type indexDesc struct {
	Name   string
	Global bool
	Keys   []string // hash, then range
	// Projection: ALL, KEYS_ONLY or INCLUDE (with Include).
	Projection string
	Include    []string
}

// projects says whether the index holds attribute name.
func (t *tableDesc) projects(ix indexDesc, name string) bool {
	if ix.Projection == "ALL" {
		return true
	}
	for _, k := range t.Keys {
		if k == name {
			return true
		}
	}
	for _, k := range ix.Keys {
		if k == name {
			return true
		}
	}
	if ix.Projection == "INCLUDE" {
		for _, k := range ix.Include {
			if k == name {
				return true
			}
		}
	}
	return false
}

// tables caches table descriptions by name.
type tables struct {
	mu     sync.Mutex
	byName map[string]*tableDesc
}

func newTables() *tables { return &tables{byName: map[string]*tableDesc{}} }

func (ts *tables) forget(name string) {
	ts.mu.Lock()
	delete(ts.byName, name)
	ts.mu.Unlock()
}

// describe returns the table's description, asked of the engine once; nil
// and an error when the engine does not know the table.
func (h *Handler) describe(ctx context.Context, name string) (*tableDesc, error) {
	h.tables.mu.Lock()
	t, ok := h.tables.byName[name]
	h.tables.mu.Unlock()
	if ok {
		return t, nil
	}
	var out struct {
		Table struct {
			TableName            string
			TableArn             string
			KeySchema            []keyElement
			AttributeDefinitions []struct{ AttributeName, AttributeType string }
			GlobalSecondaryIndexes,
			LocalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  []keyElement
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	a := h.engineCall(ctx, "DescribeTable", map[string]any{"TableName": name})
	if !a.ok() {
		return nil, fmt.Errorf("describe table %s: %s", name, a.body)
	}
	if err := json.Unmarshal(a.body, &out); err != nil {
		return nil, err
	}
	t = &tableDesc{Name: out.Table.TableName, ARN: out.Table.TableArn, Keys: keyNames(out.Table.KeySchema),
		AttrTypes: map[string]string{}, Indexes: map[string]indexDesc{}}
	for _, d := range out.Table.AttributeDefinitions {
		t.AttrTypes[d.AttributeName] = d.AttributeType
	}
	for i, list := range [][]struct {
		IndexName  string
		KeySchema  []keyElement
		Projection struct {
			ProjectionType   string
			NonKeyAttributes []string
		}
	}{out.Table.GlobalSecondaryIndexes, out.Table.LocalSecondaryIndexes} {
		for _, ix := range list {
			p := ix.Projection.ProjectionType
			if p == "" {
				p = "ALL"
			}
			t.Indexes[ix.IndexName] = indexDesc{Name: ix.IndexName, Global: i == 0, Keys: keyNames(ix.KeySchema),
				Projection: p, Include: ix.Projection.NonKeyAttributes}
		}
	}
	h.tables.mu.Lock()
	h.tables.byName[name] = t
	h.tables.mu.Unlock()
	return t, nil
}

type keyElement struct{ AttributeName, KeyType string }

// keyNames lists the key attributes, the hash key first.
func keyNames(ks []keyElement) []string {
	var out []string
	for _, k := range ks {
		if k.KeyType == "HASH" {
			out = append([]string{k.AttributeName}, out...)
		} else {
			out = append(out, k.AttributeName)
		}
	}
	return out
}

// ownAuthorization is the Authorization header of the layer's own calls: no
// engine checks the signature, but moto tells services apart by the
// credential scope.
const ownAuthorization = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"

// engineCall makes a DynamoDB call of the layer's own on the engine.
func (h *Handler) engineCall(ctx context.Context, op string, in any) *answer {
	b, err := json.Marshal(in)
	if err != nil {
		return errorAnswer(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://engine/", bytes.NewReader(b))
	if err != nil {
		return errorAnswer(http.StatusInternalServerError, "InternalServerError", err.Error())
	}
	req.Header.Set("X-Amz-Target", targetPrefix+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", ownAuthorization)
	rec := newRecorder()
	h.engine.ServeHTTP(rec, req)
	return rec.answer()
}

// tableNameOf turns a table ARN into the table's name; a name is returned
// as it is.
func tableNameOf(s string) string {
	if strings.HasPrefix(s, "arn:") {
		if i := strings.Index(s, ":table/"); i >= 0 {
			return strings.SplitN(s[i+len(":table/"):], "/", 2)[0]
		}
	}
	return s
}
