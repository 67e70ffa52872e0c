package ddbfidelity

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/clubdev/club/localcloud/internal/billing"
)

// avType is an attribute value's type ("S", "N", …) and, for a scalar, its
// text.
func avType(v json.RawMessage) (typ, text string) {
	var av map[string]json.RawMessage
	if json.Unmarshal(v, &av) != nil {
		return "", ""
	}
	for k, x := range av {
		var s string
		_ = json.Unmarshal(x, &s)
		return k, s
	}
	return "", ""
}

// checkItemKeys is DynamoDB's validation of an item's key attributes.
func checkItemKeys(t *tableDesc, it item) *answer {
	for _, k := range t.Keys {
		v, ok := it[k]
		if !ok {
			return validation("One or more parameter values were invalid: Missing the key " + k + " in the item")
		}
		typ, text := avType(v)
		if want := t.AttrTypes[k]; want != "" && typ != want {
			return validation(fmt.Sprintf("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", k, want, typ))
		}
		if (typ == "S" || typ == "B") && text == "" {
			return validation("One or more parameter values were invalid: The AttributeValue for a key attribute cannot contain an empty string value. Key: " + k)
		}
	}
	return nil
}

// checkKey is DynamoDB's validation of a Key parameter: exactly the table's
// key attributes, of their types.
func checkKey(t *tableDesc, key item) *answer {
	if len(key) != len(t.Keys) {
		return validation("The provided key element does not match the schema")
	}
	for _, k := range t.Keys {
		v, ok := key[k]
		if !ok {
			return validation("The provided key element does not match the schema")
		}
		typ, text := avType(v)
		if want := t.AttrTypes[k]; want != "" && typ != want {
			return validation("The provided key element does not match the schema")
		}
		if (typ == "S" || typ == "B") && text == "" {
			return validation("One or more parameter values were invalid: The AttributeValue for a key attribute cannot contain an empty string value. Key: " + k)
		}
	}
	return nil
}

// keyOf is the item's primary key (or the given attributes).
func keyOf(it item, names []string) item {
	k := item{}
	for _, n := range names {
		if v, ok := it[n]; ok {
			k[n] = v
		}
	}
	return k
}

func hasAll(it item, names []string) bool {
	for _, n := range names {
		if _, ok := it[n]; !ok {
			return false
		}
	}
	return true
}

// keyID identifies an item by its primary key.
func keyID(it item, names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
		b.Write(it[n])
		b.WriteByte(0)
	}
	return b.String()
}

// readUnits are the read units of reading size bytes: 4 KB a unit, half as
// much eventually consistent; reading nothing still costs the minimum.
func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// writeUnits are the write units of writing an item of size bytes (the
// larger of the item before and after the write): 1 KB a unit.
func writeUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

func itemSize(it item) int { return billing.ItemSize(billing.Item(it)) }

type consumedCapacity struct {
	TableName     string
	CapacityUnits float64
	Table         *struct{ CapacityUnits float64 } `json:",omitempty"`
}

// capacity is ConsumedCapacity as ReturnConsumedCapacity asks for it
// (TOTAL, or INDEXES with the table's part; the layer never computes it for
// a table with secondary indexes).
func capacity(table string, units float64, mode string) consumedCapacity {
	cc := consumedCapacity{TableName: table, CapacityUnits: units}
	if mode == "INDEXES" {
		cc.Table = &struct{ CapacityUnits float64 }{units}
	}
	return cc
}
