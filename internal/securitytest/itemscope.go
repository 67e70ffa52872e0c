package securitytest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/clubdev/club/localcloud/template"
)

// ItemScope says which items of a shared table one function may write:
// those whose partition key is one of LeadingKeys.
type ItemScope struct {
	// Principal and Table are logical IDs of the stack.
	Principal, Table string
	LeadingKeys      []string
}

// leadingKeysOperator is the condition operator AWS documents for
// dynamodb:LeadingKeys: every partition key the request touches must be
// one of the listed values.
const leadingKeysOperator = "ForAllValues:StringEquals"

// ItemScopedWrites checks that every Allow statement that lets a scope's
// principal write its table (a DynamoDB action other than a read, on the
// table or one of its indexes) carries a ForAllValues:StringEquals
// dynamodb:LeadingKeys condition naming only the scope's leading keys. A
// scope whose principal or table is not in the stack, or whose principal
// cannot write the table at all, is a finding too: the scope would check
// nothing.
func ItemScopedWrites(st *template.Stack, scopes ...ItemScope) []Finding {
	ix := newIndex(st)
	roles := rolesByARN(st)
	var out []Finding
	all := principals(st, ix)
	for _, sc := range scopes {
		i := slices.IndexFunc(all, func(p principal) bool { return p.source == sc.Principal })
		if i < 0 {
			out = append(out, Finding{sc.Principal, "not a function or state machine of this stack"})
			continue
		}
		stmts, _ := policyStatements(all[i], roles) // LeastPrivilege reports what cannot be read
		writes := 0
		for n, s := range stmts {
			if !strings.EqualFold(s.Effect, "Allow") || !writesTable(s, ix, sc.Table) {
				continue
			}
			writes++
			if problem := leadingKeysProblem(s.Condition, sc.LeadingKeys); problem != "" {
				out = append(out, Finding{sc.Principal, fmt.Sprintf("statement %d: may write any item of %s: %s", n+1, sc.Table, problem)})
			}
		}
		if writes == 0 {
			out = append(out, Finding{sc.Principal, "writes nothing of " + sc.Table + ": the item scope checks nothing"})
		}
	}
	return out
}

// writesTable reports whether s allows a DynamoDB write on table (its
// logical ID).
func writesTable(s statement, ix index, table string) bool {
	write := slices.ContainsFunc(s.Action, func(a string) bool {
		svc, _, _ := strings.Cut(strings.ToLower(a), ":")
		return a == "*" || svc == "dynamodb" && isWrite(a)
	})
	return write && slices.ContainsFunc(s.Resource, func(r string) bool {
		id, ok := ix.resource(r)
		return ok && id == table
	})
}

// leadingKeysProblem says what is wrong with a statement's condition as a
// scope to the given partition keys, or "".
func leadingKeysProblem(cond json.RawMessage, allowed []string) string {
	got, ok := conditionValues(cond, leadingKeysOperator, "dynamodb:LeadingKeys")
	switch {
	case !ok:
		return fmt.Sprintf("no %s dynamodb:LeadingKeys condition (want %q)", leadingKeysOperator, allowed)
	case len(got) == 0:
		return "an empty dynamodb:LeadingKeys"
	}
	for _, k := range got {
		if !slices.Contains(allowed, k) {
			return fmt.Sprintf("dynamodb:LeadingKeys names %q, not one of %q", k, allowed)
		}
	}
	return ""
}
