package infra_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recipe returns the commands of a Makefile target.
func recipe(t *testing.T, makefile, target string) []string {
	t.Helper()
	var out []string
	in := false
	for _, line := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			out = append(out, strings.TrimSpace(line))
		case in:
			return out
		}
	}
	return out
}

// `make deploy` builds static binaries: on an arm64 host a cgo build would
// link the host's glibc into functions that run on provided.al2023. It
// builds on the host (a build container cannot see go.mod).
func TestDeployBuildsStaticBinariesOnTheHost(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	cmds := recipe(t, string(mk), "deploy")
	require.NotEmpty(t, cmds)
	built := false
	for _, c := range cmds {
		if strings.Contains(c, "sam build") {
			built = true
			require.True(t, strings.HasPrefix(c, "CGO_ENABLED=0 sam build"), c)
			require.NotContains(t, c, "--use-container")
		}
	}
	require.True(t, built, "deploy runs sam build")

	tpl, err := os.ReadFile("template.yaml")
	require.NoError(t, err)
	require.Contains(t, string(tpl), "Architectures: [arm64]")
	require.Equal(t, strings.Count(string(tpl), "Type: AWS::Serverless::Function"), strings.Count(string(tpl), "Metadata: {BuildMethod: go1.x}"),
		"every function is built by SAM's Go builder")
}

// The README asks for the Go version go.mod needs.
func TestReadmeAsksForTheGoVersionOfGoMod(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	require.NotNil(t, m)
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "Go "+string(m[1])+" or newer")
}
