package localcloud_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud"
)

func TestProblemLogKeepsTheLastWarningsAndErrors(t *testing.T) {
	p := localcloud.NewProblemLog(2)
	log := slog.New(slog.NewTextHandler(p, nil))
	log.Info("started")
	log.Warn("receive failed", "queue", "q1")
	log.Error("invoke failed", "function", "f")
	log.Warn("receive failed", "queue", "q2")
	require.Equal(t, 2, p.Len())

	var out bytes.Buffer
	p.Dump(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, "--- local cloud: the last 2 warnings and errors (1 earlier ones not kept) ---", lines[0])
	require.Contains(t, lines[1], `level=ERROR msg="invoke failed" function=f`)
	require.Contains(t, lines[2], `level=WARN msg="receive failed" queue=q2`)
	require.NotContains(t, out.String(), "started")

	out.Reset()
	functions := localcloud.NewProblemLog(5)
	functions.Source = "functions"
	_, err := functions.Write([]byte("[club-NotifierFunction] {\"level\":\"INFO\",\"msg\":\"notification sent\"}\n" +
		"[club-NotifierFunction] {\"level\":\"WARN\",\"msg\":\"message will be retried\"}\n"))
	require.NoError(t, err)
	functions.Dump(&out)
	require.Equal(t, "--- functions: the last 1 warnings and errors ---\n[club-NotifierFunction] {\"level\":\"WARN\",\"msg\":\"message will be retried\"}\n", out.String(),
		"a function's JSON log lines at WARN are kept, its INFO ones are not")

	out.Reset()
	localcloud.NewProblemLog(5).Dump(&out)
	require.Empty(t, out.String(), "nothing to say, nothing said")
}
