package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MinDeadline is the shortest literal real-time deadline a test may write.
// A wait ends as soon as its condition holds, so a long deadline costs a
// passing run nothing, while a short one fails a run on a machine slower
// than the one the test was written on (a brand-new one compiling the rest
// of the module, or one shared with other work). Waits take their deadline
// from internal/patience instead.
const MinDeadline = time.Minute

// ExemptMarker, in a comment on the line of a short duration, says the
// duration is not the deadline of a wait (it is what the test is about: a
// caller's own timeout, a context cancelled on purpose). The marker must be
// followed by the reason.
const ExemptMarker = "patience:exempt"

// patiencePackage is the one place whose durations are the deadlines.
const patiencePackage = "internal/patience"

// ShortDeadline is one literal real-time deadline under MinDeadline in a
// test file.
type ShortDeadline struct {
	File string // relative to the module root
	Line int
	Call string        // what sets the deadline: "time.Now().Add", "Eventually", …
	Of   time.Duration // the literal's value
}

func (d ShortDeadline) String() string {
	return fmt.Sprintf("%s:%d: %s with a real-time deadline of %s (under %s): take it from internal/patience, or mark the line %q with the reason it is not a wait",
		d.File, d.Line, d.Call, d.Of, MinDeadline, ExemptMarker)
}

// FindShortDeadlines walks the Go test files below root (skipping testdata,
// vendor, hidden folders and internal/patience) and returns every literal
// real-time deadline under MinDeadline:
//   - time.Now().Add(d), the instant a polling loop gives up;
//   - the waitFor argument of testify's Eventually and EventuallyWithT;
//   - context.WithTimeout(ctx, d), time.After(d) and time.NewTimer(d).
//
// A duration counts when it is a constant the file or its package spells
// out (5 * time.Second, a package constant waitFor = 10 * time.Second);
// durations computed at run time are not judged.
func FindShortDeadlines(root string) ([]ShortDeadline, error) {
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if rel, _ := filepath.Rel(root, path); filepath.ToSlash(rel) == patiencePackage {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []ShortDeadline
	for _, files := range byDir {
		found, err := checkDir(root, files)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// checkDir parses one folder's files: every file for the constants, the
// test files for the deadlines.
func checkDir(root string, files []string) ([]ShortDeadline, error) {
	fset := token.NewFileSet()
	consts := map[string]ast.Expr{}
	var tests []*ast.File
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		collectConsts(f, consts)
		if strings.HasSuffix(path, "_test.go") {
			tests = append(tests, f)
		}
	}
	var out []ShortDeadline
	for _, f := range tests {
		path := fset.Position(f.Pos()).Filename
		rel, err := filepath.Rel(root, path)
		if err != nil {
			rel = path
		}
		exempt := exemptLines(fset, f)
		ev := evaluator{consts: consts, seen: map[string]bool{}}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name, arg := deadlineArg(call)
			if arg == nil {
				return true
			}
			d, ok := ev.duration(arg)
			if !ok || d <= 0 || d >= MinDeadline {
				return true
			}
			line := fset.Position(call.Pos()).Line
			if exempt[line] || exempt[fset.Position(arg.Pos()).Line] {
				return true
			}
			out = append(out, ShortDeadline{File: filepath.ToSlash(rel), Line: fset.Position(arg.Pos()).Line, Call: name, Of: d})
			return true
		})
	}
	return out, nil
}

// deadlineArg returns the name of a call that sets a real-time deadline and
// the argument that is the deadline's length, or nil.
func deadlineArg(call *ast.CallExpr) (string, ast.Expr) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", nil
	}
	pkg, _ := sel.X.(*ast.Ident)
	switch name := sel.Sel.Name; {
	case name == "Add" && len(call.Args) == 1 && isTimeNow(sel.X):
		return "time.Now().Add", call.Args[0]
	case name == "Eventually" || name == "EventuallyWithT":
		// require.Eventually(t, cond, waitFor, tick) or, on a bound
		// assertion value, r.Eventually(cond, waitFor, tick).
		i := 1
		if pkg != nil && (pkg.Name == "require" || pkg.Name == "assert") {
			i = 2
		}
		if len(call.Args) > i {
			return name, call.Args[i]
		}
	case pkg != nil && pkg.Name == "context" && name == "WithTimeout" && len(call.Args) == 2:
		return "context.WithTimeout", call.Args[1]
	case pkg != nil && pkg.Name == "time" && (name == "After" || name == "NewTimer") && len(call.Args) == 1:
		return "time." + name, call.Args[0]
	}
	return "", nil
}

func isTimeNow(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Now" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "time"
}

// exemptLines are the lines carrying the exemption marker with a reason.
func exemptLines(fset *token.FileSet, f *ast.File) map[int]bool {
	lines := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			text := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), "/*"))
			if i := strings.Index(text, ExemptMarker); i >= 0 && len(strings.TrimSpace(text[i+len(ExemptMarker):])) > 0 {
				lines[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	return lines
}

func collectConsts(f *ast.File, consts map[string]ast.Expr) {
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					consts[n.Name] = vs.Values[i]
				}
			}
		}
	}
}

// evaluator computes constant durations spelled with the time package's
// units, number literals and the package's constants.
type evaluator struct {
	consts map[string]ast.Expr
	seen   map[string]bool
}

var units = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

func (ev evaluator) duration(e ast.Expr) (time.Duration, bool) {
	v, ok := ev.value(e)
	if !ok || math.Abs(v) > math.MaxInt64 {
		return 0, false
	}
	return time.Duration(v), true
}

func (ev evaluator) value(e ast.Expr) (float64, bool) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return ev.value(e.X)
	case *ast.BasicLit:
		if e.Kind != token.INT && e.Kind != token.FLOAT {
			return 0, false
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(e.Value, "_", ""), 64)
		return v, err == nil
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "time" {
			u, ok := units[e.Sel.Name]
			return float64(u), ok
		}
	case *ast.Ident:
		def, ok := ev.consts[e.Name]
		if !ok || ev.seen[e.Name] {
			return 0, false
		}
		ev.seen[e.Name] = true
		defer delete(ev.seen, e.Name)
		return ev.value(def)
	case *ast.UnaryExpr:
		v, ok := ev.value(e.X)
		if ok && e.Op == token.SUB {
			return -v, true
		}
		return v, ok && e.Op == token.ADD
	case *ast.CallExpr: // time.Duration(n)
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Duration" && len(e.Args) == 1 {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" {
				return ev.value(e.Args[0])
			}
		}
	case *ast.BinaryExpr:
		x, ok1 := ev.value(e.X)
		y, ok2 := ev.value(e.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case token.MUL:
			return x * y, true
		case token.QUO:
			if y == 0 {
				return 0, false
			}
			return x / y, true
		case token.ADD:
			return x + y, true
		case token.SUB:
			return x - y, true
		}
	}
	return 0, false
}
