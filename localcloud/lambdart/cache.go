package lambdart

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// BuildCache links each function binary once per content: the key of a
// binary is a hash of everything that goes into it — the Go version, the
// target (GOOS, GOARCH, CGO_ENABLED=0, -trimpath), the build tags and extra
// environment, the build settings of the environment (GOFLAGS,
// GOEXPERIMENT, GOAMD64 and the like), go.mod and go.sum, and for every
// package the binary is made of, the package's files (the module's own) or
// its module version (a dependency, immutable in the module cache). Several
// programs sharing Dir — `make run` and every test package that starts a
// local cloud — compile a function once between them: a build takes an
// exclusive lock on its key, so a second program wanting the same binary
// waits for it instead of compiling it again.
//
// The go build cache already spares recompiling unchanged packages; what it
// does not spare is two processes compiling the same new package at the same
// time, and linking every binary in every process, which on two cores is
// most of a cold test run's first minutes.
type BuildCache struct {
	// Dir holds the binaries, one file per key. It is created on demand.
	Dir string
	// Keep is how many binaries per function are kept (most recently used
	// first); 0 means 3.
	Keep int
}

// BuildReport says what BuildAll did for each function.
type BuildReport struct {
	// Built lists the functions compiled by this call; Reused those taken
	// from the cache (built earlier, or by another program meanwhile).
	Built, Reused []string
}

// BuildAll writes every spec's binary to its Out path, compiling only the
// functions whose key is not in the cache, at most parallelism at a time.
// Specs must share ModuleRoot, Tags and Env (as a stack's functions do).
// Failures are joined, each a *BuildError.
func (c BuildCache) BuildAll(ctx context.Context, specs []BuildSpec, parallelism int) (BuildReport, error) {
	var report BuildReport
	if len(specs) == 0 {
		return report, nil
	}
	for _, s := range specs {
		if err := s.validate(); err != nil {
			return report, &BuildError{Function: s.Name, Err: err}
		}
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return report, fmt.Errorf("build cache: %w", err)
	}
	keys, err := buildKeys(ctx, specs)
	if err != nil {
		return report, fmt.Errorf("build cache: %w", err)
	}
	if parallelism < 1 {
		parallelism = DefaultBuildParallelism
	}
	errs := make([]error, len(specs))
	built := make([]bool, len(specs))
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			built[i], errs[i] = c.build(ctx, spec, keys[i])
		})
	}
	wg.Wait()
	for i, s := range specs {
		if errs[i] != nil {
			continue
		}
		if built[i] {
			report.Built = append(report.Built, s.Name)
		} else {
			report.Reused = append(report.Reused, s.Name)
		}
	}
	return report, errors.Join(errs...)
}

// build makes spec.Out from the cache entry for key, compiling it first
// when no program has. It reports whether it compiled.
func (c BuildCache) build(ctx context.Context, spec BuildSpec, key string) (bool, error) {
	entry := filepath.Join(c.Dir, cacheName(spec.Name)+"-"+key)
	unlock, err := lockFile(ctx, entry+".lock")
	if err != nil {
		return false, &BuildError{Function: spec.Name, Err: fmt.Errorf("build cache lock: %w", err)}
	}
	defer unlock()

	compiled := false
	if _, err := os.Stat(entry); err != nil {
		tmp := spec
		tmp.Out = fmt.Sprintf("%s.tmp%d", entry, os.Getpid())
		if err := Build(ctx, tmp); err != nil {
			_ = os.Remove(tmp.Out)
			return false, err
		}
		if err := os.Rename(tmp.Out, entry); err != nil {
			return false, &BuildError{Function: spec.Name, Err: fmt.Errorf("build cache: %w", err)}
		}
		compiled = true
	} else {
		now := time.Now()
		_ = os.Chtimes(entry, now, now) // most recently used: pruned last
	}
	if err := placeBinary(entry, spec.Out); err != nil {
		return compiled, &BuildError{Function: spec.Name, Err: err}
	}
	c.prune(spec.Name)
	return compiled, nil
}

// prune keeps the Keep most recently used binaries of one function.
func (c BuildCache) prune(name string) {
	keep := c.Keep
	if keep <= 0 {
		keep = 3
	}
	matches, _ := filepath.Glob(filepath.Join(c.Dir, cacheName(name)+"-*"))
	type entry struct {
		path string
		used time.Time
	}
	var entries []entry
	for _, m := range matches {
		if strings.HasSuffix(m, ".lock") || strings.Contains(m, ".tmp") {
			continue
		}
		if fi, err := os.Stat(m); err == nil {
			entries = append(entries, entry{m, fi.ModTime()})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.After(entries[j].used) })
	for _, e := range entries[min(keep, len(entries)):] {
		_ = os.Remove(e.path)
		_ = os.Remove(e.path + ".lock")
	}
}

// cacheName makes a function name safe as a file name prefix.
func cacheName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r == ':' {
			return '_'
		}
		return r
	}, name)
}

// placeBinary puts the cached binary at out: a hard link where the two are
// on one file system, a copy elsewhere. A running process may hold the old
// out open, so out is replaced, never written in place.
func placeBinary(entry, out string) error {
	out, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("resolve output path: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	tmp := out + ".new"
	_ = os.Remove(tmp)
	if err := os.Link(entry, tmp); err != nil {
		if err := copyFile(entry, tmp); err != nil {
			return fmt.Errorf("place binary: %w", err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("place binary: %w", err)
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// listedPackage is what `go list -json` says of one package, as far as a
// build key needs it.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Deps       []string
	GoFiles    []string
	CgoFiles   []string
	EmbedFiles []string
	SFiles     []string
	Module     *struct {
		Path    string
		Version string
		Main    bool
		Replace *struct{ Path, Version, Dir string }
	}
}

// buildSettings are the variables of the environment (which the builds
// inherit) that change what go build makes of the same sources.
var buildSettings = []string{"GOFLAGS", "GOEXPERIMENT", "GOAMD64", "GOARM64", "GOARM", "GO386", "GORISCV64", "GOPPC64", "GOFIPS140"}

// buildKeys computes every spec's key with one `go list` of all the specs'
// packages and their dependencies.
func buildKeys(ctx context.Context, specs []BuildSpec) ([]string, error) {
	spec := specs[0]
	env := buildEnv(spec.Env)
	goVersion, err := goCommand(ctx, spec.ModuleRoot, env, "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	args := []string{"list", "-e", "-deps", "-json=ImportPath,Dir,Standard,Deps,GoFiles,CgoFiles,EmbedFiles,SFiles,Module"}
	if len(spec.Tags) > 0 {
		args = append(args, "-tags", strings.Join(spec.Tags, ","))
	}
	roots := make([]string, len(specs))
	for i, s := range specs {
		roots[i] = packagePath(s.Dir)
	}
	out, err := goCommand(ctx, spec.ModuleRoot, env, append(args, roots...)...)
	if err != nil {
		return nil, err
	}
	pkgs := map[string]*listedPackage{}
	byDir := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs[p.ImportPath] = &p
		byDir[p.Dir] = &p
	}

	common := sha256.New()
	fmt.Fprintf(common, "v1\n%s\n%s/%s cgo=0 trimpath tags=%s\n", strings.TrimSpace(goVersion), runtime.GOOS, runtime.GOARCH, strings.Join(spec.Tags, ","))
	envKeys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		fmt.Fprintf(common, "env %s=%s\n", k, spec.Env[k])
	}
	for _, k := range buildSettings {
		fmt.Fprintf(common, "%s=%s\n", k, os.Getenv(k))
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(common, filepath.Join(spec.ModuleRoot, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	commonSum := common.Sum(nil)

	pkgHashes := map[string][]byte{}
	keys := make([]string, len(specs))
	for i, s := range specs {
		dir := s.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.ModuleRoot, dir)
		}
		dir, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		root := byDir[dir]
		if root == nil {
			return nil, fmt.Errorf("go list did not list %s", s.Dir)
		}
		h := sha256.New()
		h.Write(commonSum)
		for _, path := range append([]string{root.ImportPath}, root.Deps...) {
			p := pkgs[path]
			if p == nil {
				return nil, fmt.Errorf("go list did not list %s, a dependency of %s", path, s.Dir)
			}
			sum, ok := pkgHashes[path]
			if !ok {
				if sum, err = packageHash(p); err != nil {
					return nil, err
				}
				pkgHashes[path] = sum
			}
			h.Write(sum)
		}
		keys[i] = hex.EncodeToString(h.Sum(nil))[:32]
	}
	return keys, nil
}

// packageHash identifies a package's content: the standard library by the Go
// version (in the common part of the key), a dependency by its module
// version, a package of this module (or of a replacement directory) by its
// files.
func packageHash(p *listedPackage) ([]byte, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", p.ImportPath)
	switch {
	case p.Standard:
	case p.Module != nil && !p.Module.Main && p.Module.Replace == nil:
		fmt.Fprintf(h, "%s@%s\n", p.Module.Path, p.Module.Version)
	case p.Module != nil && !p.Module.Main && p.Module.Replace != nil && p.Module.Replace.Version != "":
		fmt.Fprintf(h, "%s@%s\n", p.Module.Replace.Path, p.Module.Replace.Version)
	default:
		files := make([]string, 0, len(p.GoFiles)+len(p.CgoFiles)+len(p.EmbedFiles)+len(p.SFiles))
		for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.EmbedFiles, p.SFiles} {
			files = append(files, group...)
		}
		sort.Strings(files)
		for _, f := range files {
			fmt.Fprintf(h, "file %s\n", f)
			if err := hashFile(h, filepath.Join(p.Dir, f)); err != nil {
				return nil, err
			}
		}
	}
	return h.Sum(nil), nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func goCommand(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return "", fmt.Errorf("go %s: %w\n%s", args[0], err, trimOutput(stderr.Bytes()))
	}
	return stdout.String(), nil
}
