package ddbfidelity

import (
	"encoding/json"
	"strings"
	"sync"
)

// decimals remembers, for each table created through the layer, the
// top-level attributes that may hold a number binary floating point does not
// hold exactly (a fraction, or an integer beyond 2^53), so that an update's
// arithmetic on any other attribute needs no read first: the club's
// counters never hold one. A table the layer did not see created (kept from
// an earlier run) is unknown, and every such update reads the item.
type decimals struct {
	mu     sync.Mutex
	tables map[string]map[string]bool // absent: unknown
}

func newDecimals() *decimals { return &decimals{tables: map[string]map[string]bool{}} }

func (d *decimals) created(table string) {
	d.mu.Lock()
	d.tables[table] = map[string]bool{}
	d.mu.Unlock()
}

func (d *decimals) dropped(table string) {
	d.mu.Lock()
	delete(d.tables, table)
	d.mu.Unlock()
}

// forgetAll makes every table unknown (after a write the layer does not
// read, such as a PartiQL statement).
func (d *decimals) forgetAll() {
	d.mu.Lock()
	clear(d.tables)
	d.mu.Unlock()
}

func (d *decimals) taint(table, attr string) {
	d.mu.Lock()
	if m, ok := d.tables[table]; ok {
		m[attr] = true
	}
	d.mu.Unlock()
}

// mayHold says whether attr of table may hold an inexact number.
func (d *decimals) mayHold(table, attr string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.tables[table]
	return !ok || m[attr]
}

// inexact says whether an attribute value holds, anywhere within it, a
// number binary floating point does not hold exactly.
func inexact(v json.RawMessage) bool {
	var av map[string]json.RawMessage
	if json.Unmarshal(v, &av) != nil {
		return false
	}
	for typ, x := range av {
		switch typ {
		case "N":
			var n string
			_ = json.Unmarshal(x, &n)
			return !exactInFloat(n)
		case "NS":
			var ns []string
			_ = json.Unmarshal(x, &ns)
			for _, n := range ns {
				if !exactInFloat(n) {
					return true
				}
			}
		case "L":
			var l []json.RawMessage
			_ = json.Unmarshal(x, &l)
			for _, e := range l {
				if inexact(e) {
					return true
				}
			}
		case "M":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(x, &m)
			for _, e := range m {
				if inexact(e) {
					return true
				}
			}
		}
	}
	return false
}

// notePut taints the attributes of an item written whole.
func (d *decimals) notePut(table string, it item) {
	for name, v := range it {
		if inexact(v) {
			d.taint(table, name)
		}
	}
}

// noteUpdate taints the attributes an update sets or adds to, when any of
// its values holds an inexact number.
func (d *decimals) noteUpdate(table, upd string, names map[string]string, values item) {
	found := false
	for _, v := range values {
		if inexact(v) {
			found = true
			break
		}
	}
	if !found {
		return
	}
	cl := updateClauses(upd)
	var targets []string
	for _, a := range cl["SET"] {
		if eq := strings.IndexByte(a, '='); eq >= 0 {
			targets = append(targets, a[:eq])
		}
	}
	for _, a := range cl["ADD"] {
		if f := strings.Fields(a); len(f) > 0 {
			targets = append(targets, f[0])
		}
	}
	for _, p := range targets {
		if path, ok := parsePath(p, names); ok {
			d.taint(table, path[0].name)
		}
	}
}
