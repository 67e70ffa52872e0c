package snsfix

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckPolicy: what the local cloud evaluates as SNS passes; what it
// cannot is named; what SNS refuses is refused as invalid.
func TestCheckPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy, scope, feature string
		invalid                bool
	}{
		{policy: `{"type":["enrollment.created"]}`},
		{policy: `{"type":[{"prefix":"enrollment."}]}`},
		{policy: `{"type":[{"anything-but":["a","b"]}], "x":[{"exists":false}]}`},
		{policy: `{"type":[{"anything-but":"a"}]}`},
		{policy: `{"price":[{"numeric":[">",100]}]}`, feature: FeatureNumeric},
		{policy: `{"seats":[100]}`, feature: FeatureNumeric},
		{policy: `{"f":[{"suffix":".csv"}]}`, feature: FeatureSuffix},
		{policy: `{"f":[{"equals-ignore-case":"A"}]}`, feature: FeatureIgnoreCase},
		{policy: `{"f":[{"anything-but":[1,2]}]}`, feature: FeatureAnythingButMore},
		{policy: `{"f":[{"anything-but":{"prefix":"a"}}]}`, feature: FeatureAnythingButMore},
		{policy: `{"a":{"b":["c"]}}`, feature: FeatureNested},
		{policy: `{"$or":[{"a":["b"]},{"c":["d"]}]}`, feature: FeatureOr},
		{policy: `{"ip":[{"cidr":"10.0.0.0/24"}]}`, feature: FeatureOther},
		{policy: `{"a":[null]}`, feature: FeatureOther},
		{policy: `{"a":["b"]}`, scope: "MessageBody", feature: FeatureMessageBody},
		{policy: `{"a":`, invalid: true},
		{policy: `["a"]`, invalid: true},
		{policy: `{"a":"b"}`, invalid: true},
		{policy: `{"a":[{"exists":"yes"}]}`, invalid: true},
	} {
		err := checkPolicy(tc.policy, tc.scope, nil)
		switch {
		case tc.feature != "":
			require.NotNil(t, err, tc.policy)
			require.Equal(t, tc.feature, err.feature, tc.policy)
			require.Contains(t, err.Error(), "not supported by the local cloud")
		case tc.invalid:
			require.NotNil(t, err, tc.policy)
			require.Empty(t, err.feature, tc.policy)
		default:
			require.Nil(t, err, tc.policy)
		}
	}

	// On an engine that evaluates numeric matching, only that passes.
	numeric := map[string]bool{FeatureNumeric: true}
	require.Nil(t, checkPolicy(`{"price":[{"numeric":[">",100]}],"seats":[100]}`, "", numeric))
	err := checkPolicy(`{"price":[{"numeric":[">",100]}],"f":[{"suffix":".csv"}]}`, "", numeric)
	require.NotNil(t, err)
	require.Equal(t, FeatureSuffix, err.feature)
}
