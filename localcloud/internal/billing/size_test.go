package billing_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/billing"
)

func item(t *testing.T, s string) billing.Item {
	t.Helper()
	var it billing.Item
	require.NoError(t, json.Unmarshal([]byte(s), &it))
	return it
}

func TestItemSizeCountsNamesAndValuesAsDynamoDBDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, item string
		want       int
	}{
		{"string: name and UTF-8 bytes", `{"pk":{"S":"CLASS#1"}}`, 2 + 7},
		{"multi-byte string", `{"n":{"S":"é"}}`, 1 + 2},
		{"number: one byte per two significant digits, plus one", `{"n":{"N":"12345"}}`, 1 + 3 + 1},
		{"number: zeroes trimmed", `{"n":{"N":"1000"}}`, 1 + 1 + 1},
		{"number: decimal", `{"n":{"N":"-0.0125"}}`, 1 + 2 + 1},
		{"binary: decoded length", `{"b":{"B":"AAECAw=="}}`, 1 + 4},
		{"bool and null: one byte", `{"t":{"BOOL":true},"z":{"NULL":true}}`, 1 + 1 + 1 + 1},
		{"string set", `{"ss":{"SS":["ab","cde"]}}`, 2 + 5},
		{"list: 3 bytes, 1 per element", `{"l":{"L":[{"S":"ab"},{"N":"7"}]}}`, 1 + 3 + (1 + 2) + (1 + 2)},
		{"map: names count", `{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + 1 + 1 + 1},
	} {
		require.Equal(t, c.want, billing.ItemSize(item(t, c.item)), c.name)
	}
}

func TestUnitsRoundUpPerItem(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1.0, billing.WriteUnits(0), "a missing item still costs a unit")
	require.Equal(t, 1.0, billing.WriteUnits(1024))
	require.Equal(t, 2.0, billing.WriteUnits(1025))
	require.Equal(t, 1.0, billing.ReadUnits(4096, true))
	require.Equal(t, 2.0, billing.ReadUnits(4097, true))
	require.Equal(t, 0.5, billing.ReadUnits(100, false), "eventually consistent: half")
	require.Equal(t, int64(1), billing.Chunks(0))
	require.Equal(t, int64(1), billing.Chunks(64*1024))
	require.Equal(t, int64(2), billing.Chunks(64*1024+1))
	require.Equal(t, 1024+2, billing.ItemSize(item(t, `{"pk":{"S":"`+strings.Repeat("x", 1024)+`"}}`)))
}
