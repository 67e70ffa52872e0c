package securitytest

import (
	"fmt"
	"slices"
	"strings"
)

// sourceConditionKeys are the global condition keys that tie a service
// principal's use of a resource to the account (or the resource) it acts
// for.
var sourceConditionKeys = []string{"aws:SourceAccount", "aws:SourceArn"}

// KeyPolicies checks the key policy of every AWS::KMS::Key of the
// transformed template: no statement allows every principal ("*"), and a
// statement that allows an AWS service principal has an aws:SourceAccount
// or aws:SourceArn condition, so the service uses the key only on behalf
// of this account, never for someone else who names the key (the confused
// deputy). Both branches of an Fn::If statement are checked.
func KeyPolicies(t *CFN) []Finding {
	var out []Finding
	for _, id := range t.OfType("AWS::KMS::Key") {
		doc, _ := t.Resources[id].Properties["KeyPolicy"].(map[string]any)
		if doc == nil {
			out = append(out, Finding{id, "no KeyPolicy written in the template: it cannot be checked"})
			continue
		}
		for i, item := range conditionalStatements(asList(doc["Statement"])) {
			s, _ := item.(map[string]any)
			if effect, _ := s["Effect"].(string); !strings.EqualFold(effect, "Allow") {
				continue
			}
			where := fmt.Sprintf("statement %d", i+1)
			if sid, _ := s["Sid"].(string); sid != "" {
				where += " (" + sid + ")"
			}
			principal := s["Principal"]
			m, _ := principal.(map[string]any)
			if principal == "*" || m != nil && (m["AWS"] == "*" || slices.Contains(asList(m["AWS"]), any("*"))) {
				out = append(out, Finding{id, where + ": open to every principal"})
			}
			if m != nil && m["Service"] != nil && !hasSourceCondition(s["Condition"]) {
				out = append(out, Finding{id, fmt.Sprintf("%s: the service %v may use the key without an aws:SourceAccount or aws:SourceArn condition (confused deputy)",
					where, m["Service"])})
			}
		}
	}
	return out
}

func hasSourceCondition(cond any) bool {
	ops, _ := cond.(map[string]any)
	for _, keys := range ops {
		km, _ := keys.(map[string]any)
		for k := range km {
			for _, want := range sourceConditionKeys {
				if strings.EqualFold(k, want) {
					return true
				}
			}
		}
	}
	return false
}
