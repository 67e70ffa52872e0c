package securitytest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/clubdev/club/localcloud/template"
)

// Finding is one violation, naming the resource (its logical ID) it is about.
type Finding struct {
	Resource string
	Problem  string
}

func (f Finding) String() string { return f.Resource + ": " + f.Problem }

// dataServices are the IAM service prefixes whose resources hold the
// system's data or move it.
var dataServices = map[string]bool{
	"dynamodb": true, "sqs": true, "sns": true, "s3": true, "states": true,
	"kms": true, "secretsmanager": true, "ssm": true,
}

// unscopable are data-service actions IAM does not let a policy scope to a
// resource: they need Resource "*".
var unscopable = map[string]bool{
	"states:sendtasksuccess": true, "states:sendtaskfailure": true, "states:sendtaskheartbeat": true,
}

// readOnly lists, per service, the actions that change nothing (lower case).
// Anything else, including an action not listed here, counts as a write.
var readOnly = map[string][]string{
	"dynamodb": {"getitem", "batchgetitem", "query", "scan", "conditioncheckitem", "describetable",
		"describestream", "getrecords", "getsharditerator", "liststreams", "partiqlselect", "describetimetolive"},
	"sqs":            {"receivemessage", "getqueueattributes", "getqueueurl", "listqueuetags", "listdeadlettersourcequeues"},
	"sns":            {"gettopicattributes", "listsubscriptionsbytopic", "listtagsforresource"},
	"s3":             {"getobject", "getobjectversion", "listbucket", "getbucketlocation", "getobjectattributes"},
	"states":         {"describeexecution", "describestatemachine", "getexecutionhistory", "listexecutions"},
	"kms":            {"decrypt", "describekey"},
	"secretsmanager": {"getsecretvalue", "describesecret"},
	"ssm":            {"getparameter", "getparameters", "getparametersbypath"},
}

func isWrite(action string) bool {
	svc, name, _ := strings.Cut(strings.ToLower(action), ":")
	return !slices.Contains(readOnly[svc], name)
}

// statement is one IAM policy statement; Action and Resource may be a
// string or a list.
type statement struct {
	Effect      string
	Action      stringList
	NotAction   stringList
	Resource    stringList
	NotResource stringList
	Condition   json.RawMessage
	Principal   json.RawMessage
	Sid         string
}

type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("expected a string or a list of strings: %s", b)
	}
	*l = many
	return nil
}

// statements reads a SAM Policies value. Only inline statements can be
// checked: everything else is reported.
func statements(raw json.RawMessage) ([]statement, []string) {
	if len(raw) == 0 {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		items = []json.RawMessage{raw} // a single policy: a name or a document
	}
	var (
		out      []statement
		problems []string
	)
	for _, item := range items {
		var name string
		if json.Unmarshal(item, &name) == nil {
			problems = append(problems, fmt.Sprintf("managed policy %q cannot be checked: write its statements inline", name))
			continue
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(item, &doc); err != nil {
			problems = append(problems, fmt.Sprintf("policy %s is neither a name nor a document", item))
			continue
		}
		st, ok := doc["Statement"]
		if !ok {
			keys := make([]string, 0, len(doc))
			for k := range doc {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			problems = append(problems, fmt.Sprintf("SAM policy template %s cannot be checked: write its statements inline", strings.Join(keys, ", ")))
			continue
		}
		var list []statement
		if err := json.Unmarshal(st, &list); err != nil {
			var one statement
			if err := json.Unmarshal(st, &one); err != nil {
				problems = append(problems, fmt.Sprintf("unreadable Statement: %v", err))
				continue
			}
			list = []statement{one}
		}
		out = append(out, list...)
	}
	return out, problems
}

// index maps every ARN, name and URL of the stack's data resources to the
// resource's logical ID.
type index struct {
	byKey map[string]string
}

func newIndex(st *template.Stack) index {
	ix := index{byKey: map[string]string{}}
	add := func(id string, keys ...string) {
		for _, k := range keys {
			if k != "" {
				ix.byKey[k] = id
			}
		}
	}
	for _, t := range st.Tables {
		add(t.Source, t.Name, t.ARN, t.StreamARN)
	}
	for _, q := range st.Queues {
		add(q.Source, q.ARN, q.URL, q.Name)
	}
	for _, t := range st.Topics {
		add(t.Source, t.ARN)
	}
	for _, b := range st.Buckets {
		add(b.Source, b.Name, b.ARN)
	}
	for _, sm := range st.StateMachines {
		add(sm.Source, sm.ARN)
	}
	return ix
}

// resource names the stack resource an ARN in a policy is about: a table's
// index or stream belongs to its table, an object ARN to its bucket.
func (ix index) resource(arn string) (string, bool) {
	if id, ok := ix.byKey[arn]; ok {
		return id, true
	}
	for _, sep := range []string{"/index/", "/stream/"} {
		if base, _, ok := strings.Cut(arn, sep); ok {
			if id, ok := ix.byKey[base]; ok {
				return id, true
			}
		}
	}
	if strings.HasPrefix(arn, "arn:aws:s3:::") {
		if base, _, ok := strings.Cut(arn, "/"); ok {
			id, ok := ix.byKey[base]
			return id, ok
		}
	}
	return "", false
}

// objectsOfBucket reports whether arn names objects (a key pattern, such as
// arn:aws:s3:::bucket/exports/*) of one of the stack's buckets: object
// permissions cannot name keys that do not exist yet, and the bucket scopes
// them.
func (ix index) objectsOfBucket(arn string) bool {
	path, ok := strings.CutPrefix(arn, "arn:aws:s3:::")
	if !ok {
		return false
	}
	bucket, keys, ok := strings.Cut(path, "/")
	_, isBucket := ix.byKey["arn:aws:s3:::"+bucket]
	return ok && keys != "" && isBucket && !strings.Contains(bucket, "*")
}

// streamsOfTable reports whether arn is TABLE_ARN/stream/* for one of the
// stack's tables: the form AWS documents for the stream actions of an event
// source mapping (ListStreams included).
func (ix index) streamsOfTable(arn string) bool {
	base, rest, ok := strings.Cut(arn, "/stream/")
	_, isTable := ix.byKey[base]
	return ok && rest == "*" && isTable && !strings.Contains(base, "*")
}

// nonDataManagedPolicies are AWS managed policies that grant nothing on a
// data service (logs and X-Ray only): an explicit role may attach them.
var nonDataManagedPolicies = []string{
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
	"arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess",
}

// principal is a function or state machine with its policy and what it uses.
type principal struct {
	source   string
	role     string
	policies json.RawMessage
	uses     map[string]bool
}

func principals(st *template.Stack, ix index) []principal {
	var out []principal
	for _, fn := range st.Functions {
		p := principal{source: fn.Source, role: fn.Role, policies: fn.Policies, uses: map[string]bool{}}
		use := func(key string) {
			if id, ok := ix.resource(key); ok {
				p.uses[id] = true
			}
		}
		for _, v := range fn.Environment {
			use(v)
		}
		for _, e := range fn.SQSEvents {
			use(e.QueueARN)
		}
		for _, e := range fn.DynamoDBEvents {
			use(e.StreamARN)
			use(e.OnFailureDestination)
		}
		out = append(out, p)
	}
	for _, sm := range st.StateMachines {
		p := principal{source: sm.Source, role: sm.Role, policies: sm.Policies, uses: map[string]bool{}}
		for _, v := range sm.Substitutions {
			if id, ok := ix.resource(v); ok {
				p.uses[id] = true
			}
		}
		out = append(out, p)
	}
	return out
}

func rolesByARN(st *template.Stack) map[string]template.Role {
	roles := map[string]template.Role{}
	for _, r := range st.Roles {
		roles[r.ARN] = r
	}
	return roles
}

// policyStatements are the statements of a principal's Policies and, if it
// has an explicit role, of that role's inline policies, with what cannot be
// checked.
func policyStatements(p principal, roles map[string]template.Role) ([]statement, []string) {
	stmts, problems := statements(p.policies)
	if p.role == "" {
		return stmts, problems
	}
	role, ok := roles[p.role]
	if !ok {
		problems = append(problems, fmt.Sprintf("Role %q is not a role of this stack: it cannot be checked", p.role))
	}
	for _, arn := range role.ManagedPolicyARNs {
		if !slices.Contains(nonDataManagedPolicies, arn) {
			problems = append(problems, fmt.Sprintf("role %s: managed policy %q cannot be checked: write its statements inline", role.Source, arn))
		}
	}
	for _, pol := range role.Policies {
		more, pp := statements(pol.PolicyDocument)
		stmts = append(stmts, more...)
		problems = append(problems, pp...)
	}
	return stmts, problems
}

// LeastPrivilege checks every function's and state machine's policy, and
// every queue policy, as the package documentation describes.
func LeastPrivilege(st *template.Stack) []Finding {
	ix := newIndex(st)
	var out []Finding
	report := func(id, format string, args ...any) {
		out = append(out, Finding{Resource: id, Problem: fmt.Sprintf(format, args...)})
	}
	roles := rolesByARN(st)
	for _, p := range principals(st, ix) {
		stmts, problems := policyStatements(p, roles)
		for _, pr := range problems {
			report(p.source, "%s", pr)
		}
		for i, s := range stmts {
			where := fmt.Sprintf("statement %d", i+1)
			if s.Sid != "" {
				where += " (" + s.Sid + ")"
			}
			if len(s.NotAction) > 0 || len(s.NotResource) > 0 {
				report(p.source, "%s: NotAction/NotResource grants everything else", where)
				continue
			}
			if !strings.EqualFold(s.Effect, "Allow") {
				continue // Deny only narrows
			}
			data := false
			for _, a := range s.Action {
				if a == "*" {
					report(p.source, "%s: action \"*\"", where)
					data = true
					continue
				}
				svc, _, _ := strings.Cut(strings.ToLower(a), ":")
				if !dataServices[svc] {
					continue
				}
				data = true
				if strings.Contains(a, "*") {
					report(p.source, "%s: wildcard action %q on a data service", where, a)
				}
			}
			if !data {
				continue
			}
			for _, r := range s.Resource {
				if !strings.Contains(r, "*") {
					continue
				}
				if (!allUnscopable(s.Action) || r != "*") && !decryptsOnlyThroughService(st, s, r) && !ix.objectsOfBucket(r) && !ix.streamsOfTable(r) {
					report(p.source, "%s: wildcard resource %q on a data service", where, r)
				}
			}
			writes := slices.ContainsFunc(s.Action, func(a string) bool {
				svc, _, _ := strings.Cut(strings.ToLower(a), ":")
				return (a == "*" || dataServices[svc]) && !unscopable[strings.ToLower(a)] && isWrite(a)
			})
			if !writes {
				continue
			}
			for _, r := range s.Resource {
				if strings.Contains(r, "*") && !ix.objectsOfBucket(r) {
					continue // reported above
				}
				id, ok := ix.resource(r)
				switch {
				case !ok:
					report(p.source, "%s: may write %q, which is not a resource of this stack", where, r)
				case !p.uses[id]:
					report(p.source, "%s: may write %s, which it does not use (no environment variable or event source names it)", where, id)
				}
			}
		}
	}
	out = append(out, queuePolicies(st)...)
	return out
}

// keyDecryptServices are the services through which a function may decrypt
// with any key of its account: each decrypts only what its own permissions
// (a parameter, a secret) let the function read.
var keyDecryptServices = []string{"ssm", "secretsmanager"}

// decryptsOnlyThroughService reports whether statement s, for resource r,
// only lets KMS decrypt on behalf of SSM or Secrets Manager: kms:Decrypt
// alone, on the keys of the stack's own account and region
// (arn:…:kms:REGION:ACCOUNT:key/*), under a StringEquals kms:ViaService
// condition naming those services in the stack's region. The key of a
// SecureString parameter or a secret is rarely known to the template (the
// AWS managed key has no fixed ARN); the service's own permission scopes
// what is decrypted.
func decryptsOnlyThroughService(st *template.Stack, s statement, r string) bool {
	if len(s.Action) != 1 || !strings.EqualFold(s.Action[0], "kms:Decrypt") {
		return false
	}
	arn, ok := strings.CutPrefix(r, "arn:")
	partition, keys, _ := strings.Cut(arn, ":")
	if !ok || partition == "" || keys != "kms:"+st.Region+":"+st.AccountID+":key/*" {
		return false
	}
	via, ok := conditionValues(s.Condition, "StringEquals", "kms:ViaService")
	if !ok || len(via) == 0 {
		return false
	}
	for _, v := range via {
		svc, ok := strings.CutSuffix(v, "."+st.Region+".amazonaws.com")
		if !ok || !slices.Contains(keyDecryptServices, svc) {
			return false
		}
	}
	return true
}

// conditionValues returns the values a statement's Condition gives key
// (compared case-insensitively, as IAM does) under the operator op, and
// whether it gives any: false too for an unreadable condition.
func conditionValues(raw json.RawMessage, op, key string) (stringList, bool) {
	var cond map[string]map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &cond) != nil {
		return nil, false
	}
	for k, v := range cond[op] {
		if !strings.EqualFold(k, key) {
			continue
		}
		var values stringList
		if err := json.Unmarshal(v, &values); err != nil {
			return nil, false
		}
		return values, true
	}
	return nil, false
}

func allUnscopable(actions []string) bool {
	for _, a := range actions {
		if !unscopable[strings.ToLower(a)] {
			return false
		}
	}
	return len(actions) > 0
}

// queuePolicies checks who may send to the stack's queues.
func queuePolicies(st *template.Stack) []Finding {
	var out []Finding
	for _, qp := range st.QueuePolicies {
		var doc struct {
			Statement []statement
		}
		if err := json.Unmarshal(qp.PolicyDocument, &doc); err != nil {
			out = append(out, Finding{qp.Source, fmt.Sprintf("unreadable PolicyDocument: %v", err)})
			continue
		}
		for i, s := range doc.Statement {
			if !strings.EqualFold(s.Effect, "Allow") {
				continue
			}
			var principal any
			_ = json.Unmarshal(s.Principal, &principal)
			m, _ := principal.(map[string]any)
			if principal == "*" || (m != nil && m["AWS"] == "*") {
				out = append(out, Finding{qp.Source, fmt.Sprintf("statement %d: open to every principal", i+1)})
			}
			if m != nil && m["Service"] != nil && !strings.Contains(string(s.Condition), "aws:SourceArn") {
				out = append(out, Finding{qp.Source, fmt.Sprintf("statement %d: a service may send without an aws:SourceArn condition (confused deputy)", i+1)})
			}
			for _, a := range s.Action {
				if strings.Contains(a, "*") {
					out = append(out, Finding{qp.Source, fmt.Sprintf("statement %d: wildcard action %q", i+1, a)})
				}
			}
		}
	}
	return out
}
