package lambdart_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/lambdart"
)

func TestBuildFailureNamesFunctionAndEveryFailureIsReported(t *testing.T) {
	t.Parallel()
	root, write := tempModule(t)
	write("functions/good/main.go", "package main\n\nfunc main() {}\n")
	write("functions/typo/main.go", "package main\n\nfunc main() { undefinedThing() }\n")
	write("functions/syntax/main.go", "package main\n\nfunc main() {\n")

	spec := func(name string) lambdart.BuildSpec {
		return lambdart.BuildSpec{
			Name:       name,
			Dir:        "functions/" + name, // no "./": Build must still read it as a directory
			ModuleRoot: root,
			Out:        filepath.Join(root, "out", name, "bootstrap"),
			Env:        map[string]string{"GOFLAGS": "-mod=mod", "GOWORK": "off"},
		}
	}

	err := lambdart.BuildAll(t.Context(), []lambdart.BuildSpec{spec("typo"), spec("good"), spec("syntax")}, 2)
	require.Error(t, err)
	require.ErrorContains(t, err, `build function "typo"`)
	require.ErrorContains(t, err, "undefined: undefinedThing")
	require.ErrorContains(t, err, `build function "syntax"`)
	require.NotContains(t, err.Error(), `"good"`)

	var buildErr *lambdart.BuildError
	require.True(t, errors.As(err, &buildErr))
	require.Contains(t, []string{"typo", "syntax"}, buildErr.Function)

	info, err := os.Stat(filepath.Join(root, "out", "good", "bootstrap"))
	require.NoError(t, err, "a failure elsewhere does not stop the good build")
	require.NotZero(t, info.Mode().Perm()&0o111)

	err = lambdart.Build(t.Context(), spec("typo"))
	require.ErrorAs(t, err, &buildErr)
	require.Equal(t, "typo", buildErr.Function)
	require.Contains(t, buildErr.Output, "undefined: undefinedThing")
}

// tempModule makes an empty module example.com/fns in a temporary directory
// and returns it with a function that writes a file into it.
func tempModule(t *testing.T) (string, func(rel, content string)) {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write("go.mod", "module example.com/fns\n\ngo 1.26\n")
	return root, write
}
