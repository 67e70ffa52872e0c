package purchasetest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/club/purchase"
)

// Memory is the in-memory fake of the purchase domain's ports: intensives,
// purchases, their idempotency records and outbox rows. It keeps the
// DynamoDB adapter's contract (RunStore checks both): every write is
// all-or-nothing under one mutex, conditions and error precedence are the
// same, and values are copied in and out. Safe for concurrent use.
type Memory struct {
	mu         sync.Mutex
	intensives map[string]purchase.IntensiveSnapshot
	purchases  map[string]purchase.Snapshot
	access     map[[2]string]string // (intensive, student) → purchase
	records    map[[2]string]idempotency.Record
	outbox     map[string]outbox.Row
}

var _ purchase.Store = (*Memory)(nil)

// NewMemory returns an empty fake.
func NewMemory() *Memory {
	return &Memory{
		intensives: map[string]purchase.IntensiveSnapshot{},
		purchases:  map[string]purchase.Snapshot{},
		access:     map[[2]string]string{},
		records:    map[[2]string]idempotency.Record{},
		outbox:     map[string]outbox.Row{},
	}
}

// Intensives returns the fake as an IntensiveRepository. Create and Get are
// taken by the purchase store's methods on Memory itself.
func (m *Memory) Intensives() purchase.IntensiveRepository { return intensives{m} }

type intensives struct{ m *Memory }

func (r intensives) Create(_ context.Context, in purchase.Intensive) error {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	s := in.Snapshot()
	if _, ok := r.m.intensives[s.ID]; ok {
		return fmt.Errorf("create intensive %s: already exists", s.ID)
	}
	r.m.intensives[s.ID] = s
	return nil
}

func (r intensives) Get(_ context.Context, id string) (purchase.Intensive, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	s, ok := r.m.intensives[id]
	if !ok {
		return purchase.Intensive{}, fmt.Errorf("intensive %s: %w", id, purchase.ErrIntensiveNotFound)
	}
	return purchase.IntensiveFromSnapshot(s), nil
}

// Get reads a purchase (purchase.Store).
func (m *Memory) Get(_ context.Context, id string) (purchase.Purchase, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.purchases[id]
	if !ok {
		return purchase.Purchase{}, fmt.Errorf("purchase %s: %w", id, club.ErrNotFound)
	}
	return purchase.FromSnapshot(s), nil
}

// Create commits a purchase with the same checks, in the same order, as
// the DynamoDB transaction.
func (m *Memory) Create(_ context.Context, c purchase.Creation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := c.Purchase.Snapshot()
	key := [2]string{c.Idempotency.Caller, c.Idempotency.Key}
	if rec, ok := m.records[key]; ok {
		return &idempotency.ExistsError{Record: rec}
	}
	in, ok := m.intensives[p.IntensiveID]
	switch {
	case !ok:
		return fmt.Errorf("create purchase %s: %w", p.ID, purchase.ErrIntensiveNotFound)
	case in.Capacity-in.SeatsHeld-in.SeatsTaken <= 0:
		return purchase.ErrIntensiveFull
	}
	if _, ok := m.purchases[p.ID]; ok {
		return fmt.Errorf("create purchase %s: purchase id already used", p.ID)
	}
	row, err := outbox.NewRow(c.Event, p.CreatedAt)
	if err != nil {
		return fmt.Errorf("create purchase %s: %w", p.ID, err)
	}
	if _, ok := m.outbox[row.EventID]; ok {
		return fmt.Errorf("create purchase %s: event id %s already used in the outbox", p.ID, row.EventID)
	}
	in.SeatsHeld++
	m.intensives[in.ID] = in
	m.purchases[p.ID] = p
	m.records[key] = c.Idempotency
	m.outbox[row.EventID] = row
	return nil
}

// Update applies change under the fake's lock (so it never loses a race)
// with the adapter's rules for seat effects and access.
func (m *Memory) Update(_ context.Context, id string, change func(*purchase.Purchase) error) (purchase.Purchase, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.purchases[id]
	if !ok {
		return purchase.Purchase{}, fmt.Errorf("purchase %s: %w", id, club.ErrNotFound)
	}
	before := purchase.FromSnapshot(s)
	after := purchase.FromSnapshot(s)
	if err := change(&after); err != nil {
		return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, err)
	}
	if after.Equal(before) {
		return after, nil
	}
	effect := purchase.SeatUnchanged
	if before.Status() != after.Status() {
		if effect, ok = purchase.SeatEffectBetween(before, after); !ok {
			return purchase.Purchase{}, &purchase.TransitionError{From: before.Status(), To: after.Status()}
		}
	}
	var rows []outbox.Row
	for _, env := range after.Events() {
		h := after.History()
		row, err := outbox.NewRow(env, h[len(h)-1].At)
		if err != nil {
			return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, err)
		}
		rows = append(rows, row)
	}
	in := m.intensives[after.IntensiveID()]
	accessKey := [2]string{after.IntensiveID(), after.StudentID()}
	if effect != purchase.SeatUnchanged && in.SeatsHeld <= 0 {
		return purchase.Purchase{}, fmt.Errorf("update purchase %s: intensive %s has no held seat (invariant broken)", id, in.ID)
	}
	switch effect {
	case purchase.SeatReleased:
		in.SeatsHeld--
	case purchase.SeatTaken:
		if _, taken := m.access[accessKey]; taken {
			return purchase.Purchase{}, fmt.Errorf("update purchase %s: %w", id, purchase.ErrAlreadyHasAccess)
		}
		in.SeatsHeld--
		in.SeatsTaken++
		m.access[accessKey] = after.ID()
	}
	if effect != purchase.SeatUnchanged {
		m.intensives[in.ID] = in
	}
	for _, row := range rows {
		m.outbox[row.EventID] = row
	}
	m.purchases[id] = after.Snapshot()
	return after, nil
}

// Idempotency returns the fake as an idempotency.Store.
func (m *Memory) Idempotency() idempotency.Store { return records{m} }

type records struct{ m *Memory }

func (r records) Get(_ context.Context, caller, key string) (idempotency.Record, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	rec, ok := r.m.records[[2]string{caller, key}]
	if !ok {
		return idempotency.Record{}, fmt.Errorf("idempotency record %q: %w", key, club.ErrNotFound)
	}
	return rec, nil
}

// Unpublished returns up to limit pending outbox rows created before
// createdBefore, oldest first (outbox.Store's contract).
func (m *Memory) Unpublished(_ context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return outbox.Pending(maps.Values(m.outbox), createdBefore, limit), nil
}

// HasAccess reports whether the student has access to the intensive.
func (m *Memory) HasAccess(intensiveID, studentID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.access[[2]string{intensiveID, studentID}]
	return ok
}
