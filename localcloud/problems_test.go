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
	localcloud.NewProblemLog(5).Dump(&out)
	require.Empty(t, out.String(), "nothing to say, nothing said")
}
