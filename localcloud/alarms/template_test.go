package alarms_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

// TestEveryAlarmHasAnOwner: every alarm of infra/template.yaml notifies the
// ops topic when it fires and when it clears, and its description names a
// document of the repository that tells what to do.
func TestEveryAlarmHasAnOwner(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	st, err := template.Load(filepath.Join(root, "infra", "template.yaml"), template.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, st.Alarms)
	var ops string
	for _, tp := range st.Topics {
		if tp.Source == "OpsTopic" {
			ops = tp.ARN
		}
	}
	require.NotEmpty(t, ops, "the template has an ops topic")
	doc := regexp.MustCompile(`docs/[a-z0-9/._-]+\.md`)
	for _, a := range st.Alarms {
		require.Equal(t, []string{ops}, a.AlarmActions, "%s notifies the ops topic when it fires", a.Source)
		require.Equal(t, []string{ops}, a.OKActions, "%s notifies the ops topic when it clears", a.Source)
		require.True(t, a.ActionsEnabled, a.Source)
		path := doc.FindString(a.Description)
		require.NotEmpty(t, path, "%s: the description names a runbook: %q", a.Source, a.Description)
		_, err := os.Stat(filepath.Join(root, path))
		require.NoError(t, err, "%s names %s", a.Source, path)
	}
}
