package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSectionsWrittenAloneSurviveTheReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	require.NoError(t, WriteSection(path, "persistence-startup", "## Start-up\n\n1.7 s\n"))
	require.NoError(t, WriteSection(path, "other", "## Other\n"))
	require.NoError(t, WriteSection(path, "persistence-startup", "## Start-up\n\n1.6 s\n"))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "<!-- begin persistence-startup -->\n## Start-up\n\n1.6 s\n<!-- end persistence-startup -->\n\n"+
		"<!-- begin other -->\n## Other\n<!-- end other -->\n", string(raw), "replaced in place, added at the end")

	r := &Report{}
	_, err = r.Write(path)
	require.NoError(t, err)
	raw, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), "# Benchmarks")
	require.Contains(t, string(raw), "<!-- begin persistence-startup -->\n## Start-up\n\n1.6 s\n<!-- end persistence-startup -->\n")
	require.Contains(t, string(raw), "<!-- begin other -->\n## Other\n<!-- end other -->\n")
}
