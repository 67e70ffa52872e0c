package operationtest

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/outbox"
)

// Memory is the in-memory fake of operation.Store, with the outbox rows its
// creations write. It keeps the DynamoDB adapter's contract (RunStore checks
// both): every write is all-or-nothing under one mutex and values are copied
// in and out. Safe for concurrent use.
type Memory struct {
	mu         sync.Mutex
	operations map[string]operation.Snapshot
	outbox     map[string]outbox.Row
}

var _ operation.Store = (*Memory)(nil)

// NewMemory returns an empty fake.
func NewMemory() *Memory {
	return &Memory{operations: map[string]operation.Snapshot{}, outbox: map[string]outbox.Row{}}
}

// Create stores the operation and its outbox row together.
func (m *Memory) Create(_ context.Context, c operation.Creation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := c.Operation.Snapshot()
	if _, ok := m.operations[s.ID]; ok {
		return fmt.Errorf("create operation %s: %w", s.ID, operation.ErrExists)
	}
	row, err := outbox.NewRow(c.Event, s.CreatedAt)
	if err != nil {
		return fmt.Errorf("create operation %s: %w", s.ID, err)
	}
	if _, ok := m.outbox[row.EventID]; ok {
		return fmt.Errorf("create operation %s: event id %s already used in the outbox", s.ID, row.EventID)
	}
	m.operations[s.ID] = s
	m.outbox[row.EventID] = row
	return nil
}

// Get reads an operation.
func (m *Memory) Get(_ context.Context, id string) (operation.Operation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.operations[id]
	if !ok {
		return operation.Operation{}, fmt.Errorf("operation %s: %w", id, operation.ErrNotFound)
	}
	return operation.FromSnapshot(s), nil
}

// List pages through the creator's operations newest first (ties by id,
// descending). Its cursor is the position of the last operation returned.
func (m *Memory) List(_ context.Context, q operation.ListQuery) (operation.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var after *operation.Snapshot
	if q.After != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.After)
		at, id, ok := strings.Cut(string(raw), "|")
		t, terr := time.Parse(time.RFC3339Nano, at)
		if err != nil || !ok || terr != nil || id == "" {
			return operation.Page{}, club.Invalid("cursor", "is not a cursor of this list")
		}
		after = &operation.Snapshot{ID: id, CreatedAt: t}
	}
	var mine []operation.Snapshot
	for _, s := range m.operations {
		if s.CreatedBy == q.CreatedBy && (q.Kind == "" || s.Kind == q.Kind) && (after == nil || newer(*after, s)) {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b operation.Snapshot) int {
		if newer(a, b) {
			return -1
		}
		return 1
	})
	var page operation.Page
	for i, s := range mine {
		if i == q.Limit {
			last := mine[i-1]
			page.Next = base64.RawURLEncoding.EncodeToString([]byte(last.CreatedAt.Format(time.RFC3339Nano) + "|" + last.ID))
			break
		}
		page.Operations = append(page.Operations, operation.FromSnapshot(s))
	}
	return page, nil
}

// newer reports whether a comes before b in a list: created later, or at
// the same time with a greater id.
func newer(a, b operation.Snapshot) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// Update applies change under the fake's lock, so it never loses a race.
func (m *Memory) Update(_ context.Context, id string, change func(*operation.Operation) error) (operation.Operation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.operations[id]
	if !ok {
		return operation.Operation{}, fmt.Errorf("operation %s: %w", id, operation.ErrNotFound)
	}
	before, after := operation.FromSnapshot(s), operation.FromSnapshot(s)
	if err := change(&after); err != nil {
		return operation.Operation{}, fmt.Errorf("update operation %s: %w", id, err)
	}
	if !after.Equal(before) {
		m.operations[id] = after.Snapshot()
	}
	return after, nil
}

// Unpublished returns up to limit pending outbox rows created before
// createdBefore, oldest first (outbox.Store's contract).
func (m *Memory) Unpublished(_ context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return outbox.Pending(maps.Values(m.outbox), createdBefore, limit), nil
}
