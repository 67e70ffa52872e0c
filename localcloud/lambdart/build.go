package lambdart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// DefaultBuildParallelism is how many functions BuildAll compiles at once
// when asked for zero: the Go compiler already uses every core, so more
// parallel builds only add memory pressure.
const DefaultBuildParallelism = 2

// maxBuildOutput bounds the compiler output kept in a BuildError; the first
// errors are the useful ones and the go command stops after ten per package.
const maxBuildOutput = 8 << 10

// BuildSpec describes how to compile one function into its bootstrap binary.
type BuildSpec struct {
	// Name is the function name; it only labels errors.
	Name string
	// Dir is the function's package directory relative to ModuleRoot, for
	// example "./functions/api".
	Dir string
	// ModuleRoot is the directory holding go.mod.
	ModuleRoot string
	// Out is the path of the binary to write (conventionally ".../bootstrap").
	// A relative path is taken relative to the current directory.
	Out string
	// Tags are extra build tags.
	Tags []string
	// Env holds extra environment variables for the go command (GOFLAGS,
	// GOPROXY, ...); they override the inherited environment.
	Env map[string]string
}

// BuildError reports a function that did not compile.
type BuildError struct {
	Function string
	// Output is the go command's combined output, trimmed.
	Output string
	Err    error
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("build function %q: %v", e.Function, e.Err)
	if e.Output != "" {
		msg += "\n" + e.Output
	}
	return msg
}

func (e *BuildError) Unwrap() error { return e.Err }

// Build runs `go build -trimpath -o <Out> [-tags ...] <Dir>` in ModuleRoot
// with CGO_ENABLED=0 for the host's OS and architecture, which on a Linux
// host is exactly the provided.al2023 target of the same architecture. (The
// binary has to run on this machine, so the host OS wins on other systems.)
// Rebuilding an unchanged function is cheap: the go build cache answers.
// A failure is a *BuildError naming the function and carrying the compiler
// output. Build is safe for concurrent use with distinct Out paths.
func Build(ctx context.Context, spec BuildSpec) error {
	if err := spec.validate(); err != nil {
		return &BuildError{Function: spec.Name, Err: err}
	}
	out, err := filepath.Abs(spec.Out)
	if err != nil {
		return &BuildError{Function: spec.Name, Err: fmt.Errorf("resolve output path: %w", err)}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return &BuildError{Function: spec.Name, Err: fmt.Errorf("create output directory: %w", err)}
	}

	args := []string{"build", "-trimpath", "-o", out}
	if len(spec.Tags) > 0 {
		args = append(args, "-tags", strings.Join(spec.Tags, ","))
	}
	args = append(args, packagePath(spec.Dir))

	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = spec.ModuleRoot
	cmd.Env = buildEnv(spec.Env)
	output, err := cmd.CombinedOutput()
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return &BuildError{Function: spec.Name, Output: trimOutput(output), Err: err}
	}
	return nil
}

// BuildAll builds every spec, at most parallelism at a time
// (DefaultBuildParallelism when parallelism < 1). It always attempts every
// build and returns all failures joined (each a *BuildError), in the order
// of specs.
func BuildAll(ctx context.Context, specs []BuildSpec, parallelism int) error {
	if parallelism < 1 {
		parallelism = DefaultBuildParallelism
	}
	errs := make([]error, len(specs))
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = Build(ctx, spec)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s BuildSpec) validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("name is empty"))
	}
	if s.Dir == "" {
		errs = append(errs, errors.New("package directory is empty"))
	}
	if s.ModuleRoot == "" {
		errs = append(errs, errors.New("module root is empty"))
	}
	if s.Out == "" {
		errs = append(errs, errors.New("output path is empty"))
	}
	return errors.Join(errs...)
}

// packagePath turns a directory into a package pattern the go command reads
// as a directory: "functions/api" would otherwise be taken for an import
// path in the standard library.
func packagePath(dir string) string {
	dir = filepath.ToSlash(dir)
	if filepath.IsAbs(dir) || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../") || dir == "." {
		return dir
	}
	return "./" + dir
}

func buildEnv(extra map[string]string) []string {
	env := append(os.Environ(),
		"CGO_ENABLED=0",
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
	)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k]) // later entries win in os/exec
	}
	return env
}

func trimOutput(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxBuildOutput {
		s = s[:maxBuildOutput] + "\n[output truncated]"
	}
	return s
}
