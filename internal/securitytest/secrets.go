package securitytest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/clubdev/club/localcloud/template"
)

// secretName matches environment variable names that announce a secret.
var secretName = regexp.MustCompile(`(?i)(SECRET|PASSWORD|PASSWD|PRIVATE_KEY|API_KEY|ACCESS_KEY|_TOKEN$)`)

// secretLiterals match values that are secrets whatever their variable is
// called: CloudFormation dynamic references (resolved into the plain value),
// AWS access keys, PEM private keys, well-known provider key prefixes.
var secretLiterals = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`\{\{resolve:`), "a dynamic reference, which CloudFormation resolves into the plain value"},
	{regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`), "an AWS access key id"},
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`), "a private key"},
	{regexp.MustCompile(`\b(whsec|sk_live|sk_test|rk_live|ghp|xox[abpr])[_-][A-Za-z0-9]`), "a provider's secret key"},
}

// randomToken is a run of at least 32 key-like characters: a hex or base64
// secret. Names, URLs and ARNs break into shorter words at '-', '_', ':',
// '.' and '/'.
var randomToken = regexp.MustCompile(`[A-Za-z0-9+=]{32,}`)

// isReference reports whether an environment value names a secret instead
// of holding it: an SSM parameter name or an ARN (Secrets Manager, SSM).
func isReference(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "arn:")
}

// Secrets reports every function environment variable that holds a secret
// rather than a reference to one: Lambda shows the environment to anyone
// with lambda:GetFunctionConfiguration, in the console and in CloudTrail.
// A variable is a finding when
//
//   - its value carries a NoEcho parameter's value (parse the template with
//     SecretMarkers so that even a parameter without a value shows);
//   - its name announces a secret (SECRET, PASSWORD, API_KEY, ..._TOKEN)
//     and its value is not a reference (an SSM parameter name or an ARN);
//   - its value looks like a secret: a dynamic reference, an AWS access key
//     id, a private key, a provider key prefix (whsec_, sk_live_, ...), or a
//     random-looking run of 32 or more characters mixing letters and digits.
//
// The function is then expected to read the secret at start (SSM
// GetParameter with decryption, or Secrets Manager) under a policy scoped to
// that one parameter or secret.
func Secrets(st *template.Stack) []Finding {
	var noEcho []string
	for name, on := range st.NoEchoParameters {
		if on && st.Parameters[name] != "" {
			noEcho = append(noEcho, name)
		}
	}
	sort.Strings(noEcho)
	var out []Finding
	for _, fn := range st.Functions {
		vars := make([]string, 0, len(fn.Environment))
		for k := range fn.Environment {
			vars = append(vars, k)
		}
		sort.Strings(vars)
		for _, k := range vars {
			if problem := secretProblem(st, noEcho, k, fn.Environment[k]); problem != "" {
				out = append(out, Finding{fn.Source, fmt.Sprintf("environment variable %s %s", k, problem)})
			}
		}
	}
	return out
}

func secretProblem(st *template.Stack, noEcho []string, name, value string) string {
	for _, p := range noEcho {
		if strings.Contains(value, st.Parameters[p]) {
			return fmt.Sprintf("carries the NoEcho parameter %s: pass the name of an SSM SecureString parameter and read it at start", p)
		}
	}
	if secretName.MatchString(name) && !isReference(value) {
		return "holds a secret, not a reference to one (an SSM parameter name or an ARN)"
	}
	for _, l := range secretLiterals {
		if l.re.MatchString(value) {
			return "holds " + l.what
		}
	}
	for _, tok := range randomToken.FindAllString(value, -1) {
		if strings.ContainsAny(tok, "0123456789") && strings.IndexFunc(tok, isLetter) >= 0 {
			return "holds a random-looking value (a secret key?)"
		}
	}
	return ""
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// SecretMarkers gives every NoEcho parameter of st a distinctive value.
// Parse the template again with them before calling Secrets: a secret
// parameter's default is usually empty, and an empty value cannot be
// recognised where it ends up.
func SecretMarkers(st *template.Stack) map[string]string {
	out := map[string]string{}
	for name, on := range st.NoEchoParameters {
		if on {
			out[name] = "noecho-marker-" + name
		}
	}
	return out
}
