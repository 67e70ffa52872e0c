package ddbfidelity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArithmeticFindsOperandsAndStoredPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr                  string
		add                   bool
		wantValues, wantPaths []string
	}{
		{"SET #taken = #taken + :one", false, []string{":one"}, []string{"#taken"}},
		{"SET #held = #held - :one, #free = #free + :one", false, []string{":one", ":one"}, []string{"#held", "#free"}},
		{"SET m = if_not_exists(m, :zero) + :one ADD n :d", false, []string{":zero", ":one"}, []string{"m"}},
		{"SET m = if_not_exists(m, :zero) + :one ADD n :d", true, []string{":d"}, []string{"n"}},
		{"SET entity = :entity, class_id = :class ADD enrollments_total :e, cancellations_total :c", true, []string{":e", ":c"}, []string{"enrollments_total", "cancellations_total"}},
		{"SET #status = :published REMOVE unpublished_shard", false, nil, nil},
		{"set a = b + :v", false, []string{":v"}, []string{"b"}},
	} {
		v, p := arithmetic(tc.expr, tc.add)
		require.Equal(t, tc.wantValues, v, tc.expr)
		require.Equal(t, tc.wantPaths, p, tc.expr)
	}
}

func TestExactInFloat(t *testing.T) {
	t.Parallel()
	for n, want := range map[string]bool{"1": true, "-7": true, "0": true, "9007199254740992": true, "9007199254740993": false,
		"0.1": false, "1.5": false, "1E2": true, "1.0": true, "2.5E-1": false} {
		require.Equal(t, want, exactInFloat(n), n)
	}
}

func TestProjectionOfNestedPaths(t *testing.T) {
	t.Parallel()
	var it item
	require.NoError(t, json.Unmarshal([]byte(`{"pk":{"S":"a"},"top":{"S":"t"},
		"m":{"M":{"a":{"S":"ma"},"b":{"S":"mb"},"deep":{"M":{"x":{"N":"1"},"y":{"N":"2"}}}}},
		"l":{"L":[{"S":"l0"},{"S":"l1"},{"M":{"k":{"S":"v"},"o":{"S":"other"}}}]}}`), &it))
	p, ok := parseProjection("m.a, #l[2].k, l[0], m.deep.y, missing.x, top", map[string]string{"#l": "l"})
	require.True(t, ok)
	got, err := json.Marshal(p.apply(it))
	require.NoError(t, err)
	require.JSONEq(t, `{"top":{"S":"t"},"m":{"M":{"a":{"S":"ma"},"deep":{"M":{"y":{"N":"2"}}}}},"l":{"L":[{"S":"l0"},{"M":{"k":{"S":"v"}}}]}}`, string(got))

	_, ok = parseProjection("#unknown", nil)
	require.False(t, ok, "an undefined name does not parse")
	_, ok = parseProjection("l[x]", nil)
	require.False(t, ok)
}

func TestTableNameOfAnARN(t *testing.T) {
	t.Parallel()
	require.Equal(t, "club", tableNameOf("arn:aws:dynamodb:us-east-1:000000000000:table/club"))
	require.Equal(t, "club", tableNameOf("club"))
	require.Equal(t, "club", tableNameOf("arn:aws:dynamodb:us-east-1:000000000000:table/club/index/by-g"))
}

func TestTopLevelNamesOfAFilter(t *testing.T) {
	t.Parallel()
	got := topLevelNames("#m.#n = :v AND attribute_exists(#k) AND (m.a = :v OR size(l[0]) > :n) AND NOT begins_with(x, :p) and y between :a AND :b",
		map[string]string{"#k": "kind", "#m": "m", "#n": "n"})
	require.Equal(t, []string{"m", "kind", "m", "l", "x", "y"}, got)
}
