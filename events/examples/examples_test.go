package examples_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events/examples"
)

func TestAllIsWellFormed(t *testing.T) {
	t.Parallel()
	all := examples.All()
	require.NotEmpty(t, all)
	seen := map[string]bool{}
	for _, ex := range all {
		require.False(t, seen[ex.Name], "duplicate example %s", ex.Name)
		seen[ex.Name] = true
		require.True(t, json.Valid(ex.JSON), "%s is not valid JSON", ex.Name)
		var head struct {
			Type          string `json:"type"`
			SchemaVersion int    `json:"schema_version"`
		}
		require.NoError(t, json.Unmarshal(ex.JSON, &head), ex.Name)
		require.Equal(t, ex.Type, head.Type, "%s: type in file name and content differ", ex.Name)
		require.Equal(t, ex.Version, head.SchemaVersion, "%s: version in file name and content differ", ex.Name)
	}
}
