package ddbstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
)

// tableMeta is what the recorder must know about a table to record its
// writes and to describe its stream.
type tableMeta struct {
	Name      string
	ARN       string
	KeySchema []KeyElement
	ViewType  string // "" when the table has no enabled stream
}

func (t tableMeta) streaming() bool   { return t.ViewType != "" }
func (t tableMeta) streamARN() string { return StreamARN(t.ARN) }

func (t tableMeta) streamInfo() StreamInfo {
	return StreamInfo{
		StreamARN: t.streamARN(),
		TableName: t.Name,
		Label:     streamLabel,
		ViewType:  t.ViewType,
		KeySchema: t.KeySchema,
	}
}

// tableSet caches tableMeta by table name. It is safe for concurrent use.
type tableSet struct {
	mu     sync.RWMutex
	byName map[string]tableMeta
}

func newTableSet() *tableSet { return &tableSet{byName: map[string]tableMeta{}} }

func (s *tableSet) get(name string) (tableMeta, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byName[name]
	return t, ok
}

func (s *tableSet) put(t tableMeta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byName[t.Name] = t
}

// streaming returns the stream-enabled tables, by name.
func (s *tableSet) streaming() []tableMeta {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]tableMeta, 0, len(s.byName))
	for _, t := range s.byName {
		if t.streaming() {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *tableSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byName, name)
}

// streamSpecification is the StreamSpecification of CreateTable, UpdateTable
// and table descriptions.
type streamSpecification struct {
	StreamEnabled  bool   `json:"StreamEnabled"`
	StreamViewType string `json:"StreamViewType,omitempty"`
}

// enabledViewType is the view type of an enabled stream, "" otherwise.
func (s *streamSpecification) enabledViewType() string {
	if s == nil || !s.StreamEnabled {
		return ""
	}
	return s.StreamViewType
}

// tableDescription is the part of a TableDescription the recorder reads.
type tableDescription struct {
	TableName           string               `json:"TableName"`
	TableArn            string               `json:"TableArn"`
	KeySchema           []KeyElement         `json:"KeySchema"`
	StreamSpecification *streamSpecification `json:"StreamSpecification"`
}

// learn records what a table description says about a table, with the
// given stream view type, and opens the table's stream in the log if it has
// one.
func (rec *Recorder) learn(desc tableDescription, viewType string) tableMeta {
	t := tableMeta{Name: desc.TableName, ARN: desc.TableArn, KeySchema: desc.KeySchema, ViewType: viewType}
	rec.tables.put(t)
	if t.streaming() {
		rec.log.Enable(t.streamInfo())
	}
	return t
}

// table returns what the recorder knows about a table. For a table it has
// not seen yet (one kumo restored from its data directory, or created by
// someone talking to kumo directly) it asks kumo once with DescribeTable and
// takes the stream settings kumo reports. known is false when kumo does not
// know the table either.
func (rec *Recorder) table(ctx context.Context, r *http.Request, name string) (t tableMeta, known bool, err error) {
	if t, ok := rec.tables.get(name); ok {
		return t, true, nil
	}
	resp, err := rec.call(ctx, r, "DescribeTable", map[string]string{"TableName": name})
	if err != nil {
		return tableMeta{}, false, err
	}
	if !resp.ok() {
		return tableMeta{}, false, nil
	}
	var out struct {
		Table tableDescription `json:"Table"`
	}
	if err := json.Unmarshal(resp.body.Bytes(), &out); err != nil {
		return tableMeta{}, false, fmt.Errorf("decode DescribeTable %s: %w", name, err)
	}
	return rec.learn(out.Table, out.Table.StreamSpecification.enabledViewType()), true, nil
}

// tableRequest is the part of CreateTable, UpdateTable, DeleteTable and
// DescribeTable requests the recorder reads.
type tableRequest struct {
	TableName           string               `json:"TableName"`
	StreamSpecification *streamSpecification `json:"StreamSpecification"`
}

// createTable forwards CreateTable and opens the table's stream when the
// request asks for one.
func (rec *Recorder) createTable(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	var req tableRequest
	if json.Unmarshal(body, &req) != nil {
		return rec.forward(ctx, r, body), nil // kumo answers the malformed request
	}
	viewType := req.StreamSpecification.enabledViewType()
	if req.StreamSpecification != nil && req.StreamSpecification.StreamEnabled && !validViewType(viewType) {
		return nil, validationError("invalid StreamViewType %q for table %s", viewType, req.TableName)
	}
	resp := rec.forward(ctx, r, body)
	if !resp.ok() {
		return resp, nil
	}
	desc, err := describedTable(resp, "TableDescription")
	if err != nil {
		return nil, err
	}
	t := rec.learn(desc, viewType)
	return resp, rec.patchDescription(resp, "TableDescription", t)
}

// updateTable forwards UpdateTable and applies its StreamSpecification,
// which kumo ignores. As on AWS, enabling an enabled stream or disabling a
// disabled one is a ValidationException.
func (rec *Recorder) updateTable(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	var req tableRequest
	if json.Unmarshal(body, &req) != nil {
		return rec.forward(ctx, r, body), nil
	}
	spec := req.StreamSpecification
	current, known, err := rec.table(ctx, r, req.TableName)
	if err != nil {
		return nil, err
	}
	if spec != nil && known {
		switch {
		case spec.StreamEnabled && current.streaming():
			return nil, validationError("Table already has an enabled stream: TableName: %s", req.TableName)
		case spec.StreamEnabled && !validViewType(spec.StreamViewType):
			return nil, validationError("invalid StreamViewType %q for table %s", spec.StreamViewType, req.TableName)
		case !spec.StreamEnabled && !current.streaming():
			return nil, validationError("Table does not have an enabled stream: TableName: %s", req.TableName)
		}
	}
	resp := rec.forward(ctx, r, body)
	if !resp.ok() {
		return resp, nil
	}
	desc, err := describedTable(resp, "TableDescription")
	if err != nil {
		return nil, err
	}
	viewType := current.ViewType
	if spec != nil {
		viewType = spec.enabledViewType()
	}
	t := rec.learn(desc, viewType)
	if current.streaming() && !t.streaming() {
		rec.log.Disable(t.streamARN())
	}
	return resp, rec.patchDescription(resp, "TableDescription", t)
}

// deleteTable forwards DeleteTable and closes the table's stream. The
// stream's records stay readable, as on AWS for 24 hours.
func (rec *Recorder) deleteTable(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	var req tableRequest
	if json.Unmarshal(body, &req) != nil {
		return rec.forward(ctx, r, body), nil
	}
	resp := rec.forward(ctx, r, body)
	if !resp.ok() {
		return resp, nil
	}
	desc, err := describedTable(resp, "TableDescription")
	if err != nil {
		return nil, err
	}
	t, ok := rec.tables.get(req.TableName)
	if !ok {
		t = tableMeta{Name: desc.TableName, ARN: desc.TableArn, KeySchema: desc.KeySchema,
			ViewType: desc.StreamSpecification.enabledViewType()}
	}
	rec.tables.remove(req.TableName)
	if t.streaming() {
		rec.log.Disable(t.streamARN())
	}
	return resp, rec.patchDescription(resp, "TableDescription", t)
}

// describeTable forwards DescribeTable and makes the answer name our stream.
func (rec *Recorder) describeTable(ctx context.Context, r *http.Request, body []byte) (*response, error) {
	resp := rec.forward(ctx, r, body)
	if !resp.ok() {
		return resp, nil
	}
	desc, err := describedTable(resp, "Table")
	if err != nil {
		return nil, err
	}
	t, ok := rec.tables.get(desc.TableName)
	if !ok {
		t = rec.learn(desc, desc.StreamSpecification.enabledViewType())
	}
	return resp, rec.patchDescription(resp, "Table", t)
}

func describedTable(resp *response, field string) (tableDescription, error) {
	var doc map[string]tableDescription
	if err := json.Unmarshal(resp.body.Bytes(), &doc); err != nil {
		return tableDescription{}, fmt.Errorf("decode table description: %w", err)
	}
	return doc[field], nil
}

// patchDescription rewrites the stream fields of the table description in
// resp.body[field] so that they name the local stream: kumo names its own
// stream, which nothing reads, and does not know streams enabled by
// UpdateTable. Other fields are kept as kumo wrote them.
func (rec *Recorder) patchDescription(resp *response, field string, t tableMeta) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(resp.body.Bytes(), &doc); err != nil {
		return fmt.Errorf("decode %s: %w", field, err)
	}
	var desc map[string]json.RawMessage
	if err := json.Unmarshal(doc[field], &desc); err != nil {
		return fmt.Errorf("decode %s: %w", field, err)
	}
	// Marshalling strings and a struct of plain fields cannot fail.
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	switch {
	case t.streaming():
		desc["StreamSpecification"], _ = json.Marshal(streamSpecification{StreamEnabled: true, StreamViewType: t.ViewType})
		desc["LatestStreamArn"] = str(t.streamARN())
		desc["LatestStreamLabel"] = str(streamLabel)
	case rec.log.Has(t.streamARN()):
		// A disabled stream: AWS keeps naming the latest stream.
		delete(desc, "StreamSpecification")
		desc["LatestStreamArn"] = str(t.streamARN())
		desc["LatestStreamLabel"] = str(streamLabel)
	default:
		delete(desc, "StreamSpecification")
		delete(desc, "LatestStreamArn")
		delete(desc, "LatestStreamLabel")
	}
	var err error
	if doc[field], err = json.Marshal(desc); err != nil {
		return fmt.Errorf("encode %s: %w", field, err)
	}
	patched, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", field, err)
	}
	resp.replaceBody(patched)
	return nil
}
