package lambdart_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/lambdart"
)

// Programs that start local clouds at once (test packages, make run) share
// one cache: between them each function is compiled once, and a change to
// a file it is made of — and only that — compiles it again.
func TestBuildCacheCompilesEachFunctionOnceAcrossPrograms(t *testing.T) {
	t.Parallel()
	root, write := tempModule(t)
	write("internal/greet/greet.go", "package greet\n\nfunc Hello() string { return \"hello\" }\n")
	write("functions/a/main.go", "package main\n\nimport \"example.com/fns/internal/greet\"\n\nfunc main() { println(greet.Hello()) }\n")
	write("functions/b/main.go", "package main\n\nfunc main() { println(\"b\") }\n")
	cache := lambdart.BuildCache{Dir: filepath.Join(root, "cache")}
	specs := func(state string) []lambdart.BuildSpec {
		var out []lambdart.BuildSpec
		for _, name := range []string{"a", "b"} {
			out = append(out, lambdart.BuildSpec{
				Name: name, Dir: "functions/" + name, ModuleRoot: root,
				Out: filepath.Join(root, state, name, "bootstrap"),
				Env: map[string]string{"GOFLAGS": "-mod=mod", "GOWORK": "off"},
			})
		}
		return out
	}

	// Three "programs" at once, each with its own state directory.
	reports := make([]lambdart.BuildReport, 3)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() {
			var err error
			reports[i], err = cache.BuildAll(t.Context(), specs(filepath.Join("state", string(rune('x'+i)))), 2)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	compiled := map[string]int{}
	for i, r := range reports {
		for _, name := range r.Built {
			compiled[name]++
		}
		require.Len(t, append(r.Built, r.Reused...), 2, "program %d got both functions", i)
		for _, name := range []string{"a", "b"} {
			info, err := os.Stat(filepath.Join(root, "state", string(rune('x'+i)), name, "bootstrap"))
			require.NoError(t, err)
			require.NotZero(t, info.Mode().Perm()&0o111, "executable")
		}
	}
	require.Equal(t, map[string]int{"a": 1, "b": 1}, compiled, "each function compiled once between the three")

	// A change to a package a is made of compiles a again, and only a.
	write("internal/greet/greet.go", "package greet\n\nfunc Hello() string { return \"hi\" }\n")
	r, err := cache.BuildAll(t.Context(), specs("state/y"), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, r.Built)
	require.Equal(t, []string{"b"}, r.Reused)

	// Other build tags are another binary.
	tagged := specs("state/z")
	for i := range tagged {
		tagged[i].Tags = []string{"faults"}
	}
	r, err = cache.BuildAll(t.Context(), tagged, 2)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b"}, r.Built)
}

// The environment's build settings are part of a binary's key: a program
// started with GOEXPERIMENT (or GOAMD64 and the like) set gets binaries
// built with it, not the ones built without it. Not parallel: it sets the
// process's environment.
func TestBuildCacheKeysTheEnvironmentsBuildSettings(t *testing.T) {
	root, write := tempModule(t)
	write("functions/b/main.go", "package main\n\nfunc main() { println(\"b\") }\n")
	cache := lambdart.BuildCache{Dir: filepath.Join(root, "cache")}
	spec := func(state string) []lambdart.BuildSpec {
		return []lambdart.BuildSpec{{
			Name: "b", Dir: "functions/b", ModuleRoot: root,
			Out: filepath.Join(root, state, "bootstrap"),
			Env: map[string]string{"GOFLAGS": "-mod=mod", "GOWORK": "off"},
		}}
	}
	build := func(state string) lambdart.BuildReport {
		r, err := cache.BuildAll(t.Context(), spec(state), 1)
		require.NoError(t, err)
		return r
	}

	t.Setenv("GOEXPERIMENT", "")
	require.Equal(t, []string{"b"}, build("plain").Built)
	t.Setenv("GOEXPERIMENT", "jsonv2")
	require.Equal(t, []string{"b"}, build("experiment").Built, "another experiment is another binary")
	plain, err := os.ReadFile(filepath.Join(root, "plain", "bootstrap"))
	require.NoError(t, err)
	experiment, err := os.ReadFile(filepath.Join(root, "experiment", "bootstrap"))
	require.NoError(t, err)
	require.NotEqual(t, plain, experiment)
	t.Setenv("GOEXPERIMENT", "")
	require.Equal(t, []string{"b"}, build("again").Reused, "and the plain one is still there")
}
