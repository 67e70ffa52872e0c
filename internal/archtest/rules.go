package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module whose packages the rules speak of.
const Module = "github.com/clubdev/club"

// Package is what the rules need of a package, as `go list -json` prints
// it: its direct imports and every package it depends on (Deps: the
// transitive closure of its non-test imports, what ships with it).
type Package struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// A layer is a set of the module's packages, named by path prefixes
// relative to the module ("internal/club" is that package and everything
// below it).
type layer struct {
	name     string
	prefixes []string
}

func (l layer) has(importPath string) bool {
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	if !ok {
		return false
	}
	for _, p := range l.prefixes {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// The layers. The local cloud is named by both the folder it has now and
// the top-level folder it is moving to, so that the rules hold across the
// move.
var (
	domain = layer{"the domain", []string{"internal/club"}}
	// adapters implement the domain's ports on AWS and on the providers'
	// HTTP APIs.
	adapters = layer{"an adapter", []string{
		"internal/store", "internal/payment", "internal/mail", "internal/sfnclient", "internal/userpool",
		"internal/webhooksecret",
	}}
	// edges are the functions' logic: what a function's main wires.
	edges = layer{"a function's logic", []string{
		"internal/api", "internal/relay", "internal/exporter", "internal/reports", "internal/sqsconsumer", "internal/notifier",
	}}
	functions  = layer{"a function", []string{"functions"}}
	localCloud = layer{"the local cloud", []string{"localcloud"}}
	// harness is what runs, tests or measures the system and is never
	// deployed: the programs, the suites that drive a whole stack, and the
	// local cloud.
	harness = layer{"the harness", []string{"cmd", "e2e", "bench", "reliability", "localstack", "localcloud"}}
	// testSupport are packages only tests import: by convention every
	// package whose name ends in "test" (storetest, purchasetest, opstest,
	// securitytest, …), and the ones listed here.
	testSupportListed = layer{"test support", []string{"internal/apicontract", "internal/archtest"}}
	// awsSDK is Amazon's Go SDK and Lambda runtime library.
	awsSDK = []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/aws-lambda-go", "github.com/aws/smithy-go"}
)

func isTestSupport(importPath string) bool {
	return strings.HasSuffix(importPath, "test") && strings.HasPrefix(importPath, Module+"/") || testSupportListed.has(importPath)
}

// isProduct reports whether a package ships in a function or in clubctl:
// everything of the module outside the harness and the test support.
func isProduct(importPath string) bool {
	return strings.HasPrefix(importPath, Module+"/") && !harness.has(importPath) && !isTestSupport(importPath)
}

func isAWSSDK(importPath string) bool {
	for _, p := range awsSDK {
		if importPath == p || strings.HasPrefix(importPath, p+"/") {
			return true
		}
	}
	return false
}

// localCloudMayImport is the module's packages outside the local cloud that
// it may import, each with the reason. They are none of the domain, the
// adapters, the functions or their logic; the club-specific ones are to
// plug in from cmd/club-local instead.
var localCloudMayImport = map[string]string{
	"internal/clock":     "the time source the schedules share with the sandboxes; nothing of the club in it",
	"internal/stackfile": "the file the local cloud writes for the tools: its format is the contract between them",
	"internal/fault":     "club-specific: the fault switch the local cloud serves on /_club/faults; to plug in from cmd/club-local",
	"internal/sandbox":   "club-specific: the mail and payment providers' stand-ins the local cloud runs; to plug in from cmd/club-local",
	"internal/sdkhttp":   "the HTTP client every SDK client must use: it mends an SDK defect that loses answers; nothing of the club in it",
	"internal/patience":  "the tests' one setting for how long a real-time wait lasts; nothing of the club in it",
}

// clubctl may depend on the local cloud's token issuer, and on nothing else
// of it: `clubctl token` signs tokens the local API accepts with the
// issuer's key.
const clubctlPackage = "internal/clubctl"

// Violation is one import a rule forbids.
type Violation struct {
	Rule     string
	Package  string
	Imported string
	// Through is the package's direct import that brings Imported in,
	// when it is not Imported itself.
	Through string
}

func (v Violation) String() string {
	short := func(p string) string { return strings.TrimPrefix(p, Module+"/") }
	s := fmt.Sprintf("%s: %s imports %s", v.Rule, short(v.Package), short(v.Imported))
	if v.Through != "" {
		s += " (through " + short(v.Through) + ")"
	}
	return s
}

// A rule forbids the packages it applies to to depend on some packages.
type rule struct {
	name    string
	applies func(pkg string) bool
	forbids func(pkg, dep string) bool
}

var rules = []rule{
	{"the domain imports no AWS SDK", domain.has, func(_, d string) bool { return isAWSSDK(d) }},
	{"the domain imports no adapter, function or harness", domain.has, func(_, d string) bool {
		return adapters.has(d) || edges.has(d) || functions.has(d) || harness.has(d)
	}},
	{"the local cloud imports no domain, adapter or function package", localCloud.has, func(_, d string) bool {
		return domain.has(d) || adapters.has(d) || edges.has(d) || functions.has(d)
	}},
	{"product code imports no local cloud (but clubctl its token issuer)", isProduct, func(p, d string) bool {
		return localCloud.has(d) && !(p == Module+"/"+clubctlPackage && isIssuer(d))
	}},
	{"product code imports no test support", isProduct, func(_, d string) bool { return isTestSupport(d) }},
	{"the AWS SDK's configuration is loaded only in a function's main (or clubctl)", func(p string) bool {
		return isProduct(p) && !functions.has(p) && p != Module+"/"+clubctlPackage
	}, func(_, d string) bool { return d == awsConfigPackage }},
}

// awsConfigPackage loads the AWS SDK's configuration. A function's main
// loads it once and hands it (or the clients it builds) to the packages it
// wires; clubctl's command tree is the CLI's main.
const awsConfigPackage = "github.com/aws/aws-sdk-go-v2/config"

// Check applies the rules to pkgs (the output of `go list -deps -json`:
// the module's packages and everything they depend on) and returns what
// breaks them, sorted:
//
//  1. The domain depends on no AWS SDK, no adapter, no function or its
//     logic, and no part of the harness.
//  2. The local cloud depends on no domain, adapter, function or function
//     logic package, and imports from the rest of the module only what
//     localCloudMayImport lists.
//  3. Product code depends on no part of the local cloud, except clubctl
//     on the local cloud's token issuer, and on no test support.
//  4. Only a function's main (and clubctl) loads the AWS SDK's
//     configuration.
//
// A forbidden dependency is reported once, where it enters: at the package
// of the rule's layer that imports it (directly, or through a package the
// rule does not apply to), and only the first forbidden package on the way
// (aws-sdk-go-v2/aws, not everything that package imports in turn).
func Check(pkgs []Package) []Violation {
	byPath := make(map[string]Package, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	dependsOn := func(pkg, dep string) bool { return slices.Contains(byPath[pkg].Deps, dep) }
	var out []Violation
	for _, r := range rules {
		for _, p := range pkgs {
			if !r.applies(p.ImportPath) {
				continue
			}
			var forbidden []string
			for _, d := range p.Deps {
				if r.forbids(p.ImportPath, d) {
					forbidden = append(forbidden, d)
				}
			}
			for _, d := range forbidden {
				if slices.ContainsFunc(forbidden, func(other string) bool { return other != d && dependsOn(other, d) }) {
					continue // another forbidden package brings it in
				}
				v, ok := entry(r, p, d, dependsOn)
				if ok {
					out = append(out, v)
				}
			}
		}
	}
	for _, p := range pkgs {
		if !localCloud.has(p.ImportPath) {
			continue
		}
		for _, d := range p.Imports {
			if strings.HasPrefix(d, Module+"/") && !localCloud.has(d) && !localCloudAllowed(d) {
				out = append(out, Violation{Rule: "the local cloud imports from the module only what localCloudMayImport lists", Package: p.ImportPath, Imported: d})
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// entry reports the forbidden dependency d of p, unless a direct import of
// p that the rule also applies to brings it in: it is reported there.
func entry(r rule, p Package, d string, dependsOn func(pkg, dep string) bool) (Violation, bool) {
	v := Violation{Rule: r.name, Package: p.ImportPath, Imported: d}
	if slices.Contains(p.Imports, d) {
		return v, true
	}
	for _, i := range p.Imports {
		if !dependsOn(i, d) {
			continue
		}
		if r.applies(i) && r.forbids(i, d) {
			return Violation{}, false
		}
		if v.Through == "" {
			v.Through = i
		}
	}
	return v, true
}

func localCloudAllowed(importPath string) bool {
	rel := strings.TrimPrefix(importPath, Module+"/")
	for allowed := range localCloudMayImport {
		if rel == allowed || strings.HasPrefix(rel, allowed+"/") {
			return true
		}
	}
	return false
}

// isIssuer reports whether importPath is the local cloud's token issuer,
// wherever the local cloud's folder is.
func isIssuer(importPath string) bool {
	for _, p := range localCloud.prefixes {
		if importPath == Module+"/"+p+"/issuer" {
			return true
		}
	}
	return false
}
