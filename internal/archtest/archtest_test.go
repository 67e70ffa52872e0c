package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listModule runs `go list -deps -json ./...` at the module's root and
// decodes the module's packages and everything they depend on.
func listModule(t *testing.T) []Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportRules checks the module's packages as they are.
func TestImportRules(t *testing.T) {
	pkgs := listModule(t)
	var seen struct{ domain, localCloud, product bool }
	for _, p := range pkgs {
		seen.domain = seen.domain || domain.has(p.ImportPath)
		seen.localCloud = seen.localCloud || localCloud.has(p.ImportPath)
		seen.product = seen.product || isProduct(p.ImportPath)
	}
	require.True(t, seen.domain && seen.localCloud && seen.product, "go list found the module's layers: %+v", seen)

	for _, v := range Check(pkgs) {
		t.Errorf("forbidden import: %s", v)
	}
}

// TestImportRulesCatchPlantedViolations: each rule fails on a package
// graph that breaks it, also with the local cloud at its future top-level
// folder, and lets through the imports it allows.
func TestImportRulesCatchPlantedViolations(t *testing.T) {
	m := func(rel string) string { return Module + "/" + rel }
	tests := []struct {
		name string
		pkg  Package
		rule string // "" when nothing is broken
	}{
		{"the domain on the AWS SDK", Package{ImportPath: m("internal/club/enrollment"), Deps: []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}},
			"the domain imports no AWS SDK"},
		{"the domain on an adapter", Package{ImportPath: m("internal/club/purchase"), Deps: []string{m("internal/payment")}},
			"the domain imports no adapter, function or harness"},
		{"the domain on a function's logic", Package{ImportPath: m("internal/club/purchase"), Deps: []string{m("internal/api")}},
			"the domain imports no adapter, function or harness"},
		{"the domain on shared helpers", Package{ImportPath: m("internal/club/purchase"), Deps: []string{m("internal/webhooksig"), m("internal/fault"), m("events")}},
			""},
		{"the local cloud on the domain", Package{ImportPath: m("localcloud/internal/front"), Deps: []string{m("internal/club")}},
			"the local cloud imports no domain, adapter or function package"},
		{"the moved local cloud on an adapter", Package{ImportPath: m("localcloud/internal/gateway"), Deps: []string{m("internal/store")}},
			"the local cloud imports no domain, adapter or function package"},
		{"the local cloud on something not listed", Package{ImportPath: m("localcloud"), Imports: []string{m("internal/obs")}, Deps: []string{m("internal/obs")}},
			"the local cloud imports from the module only what localCloudMayImport lists"},
		{"the local cloud on what is listed", Package{ImportPath: m("localcloud"),
			Imports: []string{m("internal/stackfile"), m("internal/sandbox/mail"), m("localcloud/issuer")},
			Deps:    []string{m("internal/stackfile"), m("internal/sandbox/mail"), m("internal/webhooksig")}},
			""},
		{"an adapter on the local cloud", Package{ImportPath: m("internal/store"), Deps: []string{m("localcloud/internal/ddbstream")}},
			"product code imports no local cloud (but clubctl its token issuer)"},
		{"a function on the moved local cloud", Package{ImportPath: m("functions/api"), Deps: []string{m("localcloud")}},
			"product code imports no local cloud (but clubctl its token issuer)"},
		{"clubctl on the issuer", Package{ImportPath: m("internal/clubctl"), Deps: []string{m("localcloud/issuer")}},
			""},
		{"clubctl on the moved issuer", Package{ImportPath: m("internal/clubctl"), Deps: []string{m("localcloud/issuer")}},
			""},
		{"clubctl on more of the local cloud", Package{ImportPath: m("internal/clubctl"), Deps: []string{m("localcloud/gateway")}},
			"product code imports no local cloud (but clubctl its token issuer)"},
		{"an ops package on test support", Package{ImportPath: m("internal/ops/status"), Deps: []string{m("internal/store/storetest")}},
			"product code imports no test support"},
		{"test support on the local cloud", Package{ImportPath: m("internal/ops/opstest"), Deps: []string{m("localcloud/sqsage")}},
			""},
		{"function logic loading the AWS configuration", Package{ImportPath: m("internal/relay"), Imports: []string{"github.com/aws/aws-sdk-go-v2/config"}, Deps: []string{"github.com/aws/aws-sdk-go-v2/config"}},
			"the AWS SDK's configuration is loaded only in a function's main (or clubctl)"},
		{"a function's main loading it", Package{ImportPath: m("functions/relay"), Imports: []string{"github.com/aws/aws-sdk-go-v2/config"}, Deps: []string{"github.com/aws/aws-sdk-go-v2/config"}},
			""},
		{"a program on the local cloud", Package{ImportPath: m("cmd/club-local"), Deps: []string{m("localcloud")}},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check([]Package{tt.pkg})
			if tt.rule == "" {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%v", got)
			require.Equal(t, tt.rule, got[0].Rule)
		})
	}
}

// TestImportRulesReportWhereAViolationEnters: a forbidden package is
// reported once, at the package of the layer that brings it in, naming the
// import it came through, and not again for what it imports or for the
// packages of the layer above.
func TestImportRulesReportWhereAViolationEnters(t *testing.T) {
	m := func(rel string) string { return Module + "/" + rel }
	sdk, smithy := "github.com/aws/aws-sdk-go-v2/aws", "github.com/aws/smithy-go"
	pkgs := []Package{
		{ImportPath: m("internal/club/enrollment"), Imports: []string{m("internal/club/class")},
			Deps: []string{m("internal/club/class"), m("internal/webhooksig"), sdk, smithy}},
		{ImportPath: m("internal/club/class"), Imports: []string{m("internal/webhooksig")},
			Deps: []string{m("internal/webhooksig"), sdk, smithy}},
		{ImportPath: m("internal/webhooksig"), Imports: []string{sdk}, Deps: []string{sdk, smithy}},
		{ImportPath: sdk, Imports: []string{smithy}, Deps: []string{smithy}},
		{ImportPath: smithy},
	}
	got := Check(pkgs)
	require.Len(t, got, 1, "%v", got)
	require.Equal(t, "the domain imports no AWS SDK: internal/club/class imports github.com/aws/aws-sdk-go-v2/aws (through internal/webhooksig)", got[0].String())
}

// TestTheFuzzBinaryLeavesTheEnginesOut: `go test -fuzz` builds every
// package of its binary with coverage instrumentation, so nothing of the
// Go build cache is reused for it. The API's fuzz target runs over the
// in-memory stores; built with the tag apifuzz (make fuzz, CI) its binary
// must not pull in kumo, the local cloud or an AWS service client, which
// made that build the longest step of a CI run on a new machine.
func TestTheFuzzBinaryLeavesTheEnginesOut(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-test", "-tags", "apifuzz", "./internal/api/")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/clubdev/club/internal/api", "go list listed the fuzz binary's packages")
	for _, d := range deps {
		heavy := strings.HasPrefix(d, "github.com/sivchari/kumo") ||
			strings.HasPrefix(d, "github.com/aws/aws-sdk-go-v2/service/") ||
			d == "github.com/clubdev/club/localcloud" || strings.HasPrefix(d, "github.com/clubdev/club/localcloud/")
		require.False(t, heavy, "the fuzz binary (-tags apifuzz ./internal/api/) depends on %s: keep tests that need an engine in a file built with !apifuzz", d)
	}
}

// TestEverySDKConfigUsesTheMendedClient: a program that loads the AWS SDK's
// configuration mends its HTTP client (sdkhttp.Mend), which
// keeps net/http from closing a connection under an answer being read. A
// main that forgot it would lose answers as the local cloud once did.
func TestEverySDKConfigUsesTheMendedClient(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "grep", "-n", "LoadDefaultConfig(", "--", "*.go", ":!*_test.go", ":!*/testdata/*").Output()
	require.NoError(t, err, "git grep")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.GreaterOrEqual(t, len(lines), 10, "git grep found the mains that load the configuration")
	for _, l := range lines {
		file, _, _ := strings.Cut(l, ":")
		src, err := os.ReadFile(filepath.Join("../..", file))
		require.NoError(t, err)
		require.Contains(t, string(src), "sdkhttp.Mend(", "%s loads the configuration without mending its HTTP client (internal/sdkhttp): %s", file, l)
	}
}
