package securitytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// CFN is a CloudFormation template as AWS deploys it: the SAM template after
// the AWS::Serverless transform, with the roles, event source mappings,
// permissions and API definitions SAM generates. Intrinsic functions stay
// as written (maps such as {"Ref": "X"}).
type CFN struct {
	Parameters map[string]map[string]any
	Conditions map[string]any
	Resources  map[string]CFNResource
	Outputs    map[string]any
}

// CFNResource is one resource of a CFN template.
type CFNResource struct {
	Type                string
	Condition           string
	DeletionPolicy      string
	UpdateReplacePolicy string
	Properties          map[string]any
}

// OfType lists the logical IDs of the resources of one type, sorted.
func (t *CFN) OfType(typ string) []string {
	var out []string
	for id, r := range t.Resources {
		if r.Type == typ {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Transform expands the SAM template at path with the AWS SAM translator,
// by running infra/sam-transform.py (next to the template) with python3:
// it needs Python 3 and the aws-sam-translator package, and no AWS account.
func Transform(ctx context.Context, path string) (*CFN, error) {
	script := filepath.Join(filepath.Dir(path), "sam-transform.py")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", script, path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the SAM transform of %s failed (it needs python3 with aws-sam-translator): %w: %s",
			filepath.Base(path), err, strings.TrimSpace(stderr.String()))
	}
	return ParseCFN(stdout.Bytes())
}

// ParseCFN reads a CloudFormation template written as JSON.
func ParseCFN(doc []byte) (*CFN, error) {
	var t CFN
	if err := json.Unmarshal(doc, &t); err != nil {
		return nil, fmt.Errorf("reading the transformed template: %w", err)
	}
	return &t, nil
}

// pattern renders a value that names a resource in a policy (a string or
// an intrinsic function) as a pattern: references become {LogicalId} or
// {LogicalId.Attribute}, which cannot contain a wildcard, so a "*" in the
// pattern is one the policy wrote. Fn::If yields both branches; anything
// else cannot be rendered and yields "".
func pattern(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case map[string]any:
		if len(x) != 1 {
			return []string{""}
		}
		for fn, arg := range x {
			switch fn {
			case "Ref":
				s, _ := arg.(string)
				return []string{"{" + s + "}"}
			case "Fn::GetAtt":
				parts, _ := arg.([]any)
				if len(parts) == 2 {
					return []string{fmt.Sprintf("{%v.%v}", parts[0], parts[1])}
				}
				if s, ok := arg.(string); ok {
					return []string{"{" + s + "}"}
				}
			case "Fn::Sub":
				s, ok := arg.(string)
				if args, isList := arg.([]any); isList && len(args) > 0 {
					s, ok = args[0].(string)
				}
				if ok {
					return []string{subPattern(s)}
				}
			case "Fn::If":
				args, _ := arg.([]any)
				if len(args) == 3 {
					return append(pattern(args[1]), pattern(args[2])...)
				}
			case "Fn::Join":
				args, _ := arg.([]any)
				if len(args) == 2 {
					sep, _ := args[0].(string)
					items, _ := args[1].([]any)
					var parts []string
					for _, it := range items {
						p := pattern(it)
						if len(p) != 1 {
							return []string{""}
						}
						parts = append(parts, p[0])
					}
					return []string{strings.Join(parts, sep)}
				}
			}
		}
	}
	return []string{""}
}

// subPattern turns ${X} into {X} (and ${!X} into the literal ${X}).
func subPattern(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.Index(rest, "}")
		if j < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		name := rest[:j]
		if strings.HasPrefix(name, "!") {
			b.WriteString("${" + name[1:] + "}")
		} else {
			b.WriteString("{" + name + "}")
		}
		s = rest[j+1:]
	}
}

// cfnStatement is an IAM statement of a transformed template.
type cfnStatement struct {
	Effect      string
	Action      any
	NotAction   any
	Resource    any
	NotResource any
	Condition   map[string]map[string]any
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// managedPolicies holds the statements of the AWS managed policies SAM
// attaches to the roles it generates, as AWS publishes them (the IAM
// console, "Permissions" tab). A role with a managed policy not listed here
// is a finding: its statements cannot be checked.
var managedPolicies = map[string][]cfnStatement{
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
		{Effect: "Allow", Action: []any{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resource: "*"},
	},
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": {
		{Effect: "Allow", Action: []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
			"xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}, Resource: "*"},
	},
	"arn:aws:iam::aws:policy/AWSXRayDaemonWriteAccess": {
		{Effect: "Allow", Action: []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
			"xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}, Resource: "*"},
	},
	"arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole": {
		{Effect: "Allow", Action: []any{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
			"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resource: "*"},
	},
	"arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole": {
		{Effect: "Allow", Action: []any{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
			"dynamodb:ListStreams", "logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}, Resource: "*"},
	},
}

// GeneratedRoles checks every IAM role of a transformed template (those SAM
// generates and those the template declares) the way [LeastPrivilege]
// checks statements: no wildcard action on a data service, and no wildcard
// resource for one, with the same exceptions (task-token callbacks; kms:Decrypt
// on the account's keys only through SSM or Secrets Manager; objects of one
// of the stack's buckets; the streams of one of the stack's tables). The
// managed policies SAM attaches are checked by their published statements:
// AWSLambdaSQSQueueExecutionRole and AWSLambdaDynamoDBExecutionRole grant
// their data actions on "*", so a function with an SQS or DynamoDB event
// source needs a role the template writes itself.
func GeneratedRoles(t *CFN) []Finding {
	var out []Finding
	for _, id := range t.OfType("AWS::IAM::Role") {
		props := t.Resources[id].Properties
		report := func(format string, args ...any) {
			out = append(out, Finding{id, fmt.Sprintf(format, args...)})
		}
		for _, m := range asList(props["ManagedPolicyArns"]) {
			arn, ok := m.(string)
			if !ok {
				report("managed policy %v cannot be checked: name it literally", m)
				continue
			}
			stmts, known := managedPolicies[arn]
			if !known {
				report("managed policy %s cannot be checked: its statements are unknown to this check", arn)
				continue
			}
			name := arn[strings.LastIndex(arn, "/")+1:]
			for i, s := range stmts {
				for _, p := range checkCFNStatement(t, s) {
					report("managed policy %s statement %d: %s", name, i+1, p)
				}
			}
		}
		for _, pol := range asList(props["Policies"]) {
			pm, _ := pol.(map[string]any)
			name, _ := pm["PolicyName"].(string)
			doc, _ := pm["PolicyDocument"].(map[string]any)
			for i, item := range conditionalStatements(asList(doc["Statement"])) {
				raw, err := json.Marshal(item)
				var s cfnStatement
				if err == nil {
					err = json.Unmarshal(raw, &s)
				}
				if m, ok := item.(map[string]any); err == nil && (!ok || m["Effect"] == nil) {
					err = fmt.Errorf("%v is not a statement", item)
				}
				if err != nil {
					report("policy %s statement %d: cannot be checked: %v", name, i+1, err)
					continue
				}
				for _, p := range checkCFNStatement(t, s) {
					report("policy %s statement %d: %s", name, i+1, p)
				}
			}
		}
		if props["PermissionsBoundary"] != nil {
			report("a permissions boundary hides what the role may do from this check")
		}
	}
	return out
}

// conditionalStatements replaces every statement written as
// Fn::If [condition, a, b] by both branches (AWS::NoValue dropped): either
// may be the one deployed, so both are checked.
func conditionalStatements(items []any) []any {
	var out []any
	for _, it := range items {
		m, ok := it.(map[string]any)
		args, isIf := m["Fn::If"].([]any)
		switch {
		case ok && len(m) == 1 && isIf && len(args) == 3:
			out = append(out, conditionalStatements(args[1:])...)
		case ok && len(m) == 1 && m["Ref"] == "AWS::NoValue":
		default:
			out = append(out, it)
		}
	}
	return out
}

// checkCFNStatement lists what is wrong with one statement.
func checkCFNStatement(t *CFN, s cfnStatement) []string {
	if s.NotAction != nil || s.NotResource != nil {
		return []string{"NotAction/NotResource grants everything else"}
	}
	if !strings.EqualFold(s.Effect, "Allow") {
		return nil
	}
	var out []string
	var actions []string
	data := false
	for _, a := range asList(s.Action) {
		name, ok := a.(string)
		if !ok {
			out = append(out, fmt.Sprintf("action %v cannot be checked", a))
			continue
		}
		actions = append(actions, name)
		if name == "*" {
			out = append(out, `action "*"`)
			data = true
			continue
		}
		svc, _, _ := strings.Cut(strings.ToLower(name), ":")
		if !dataServices[svc] {
			continue
		}
		data = true
		if strings.Contains(name, "*") {
			out = append(out, fmt.Sprintf("wildcard action %q on a data service", name))
		}
	}
	if !data {
		return out
	}
	for _, r := range asList(s.Resource) {
		for _, p := range pattern(r) {
			switch {
			case p == "":
				out = append(out, fmt.Sprintf("resource %v cannot be checked", r))
			case !strings.Contains(p, "*"):
			case p == "*" && allUnscopable(actions):
			case cfnDecryptsOnlyThroughService(actions, p, s.Condition):
			case t.objectsOfBucket(p), t.streamsOfTable(p):
			default:
				out = append(out, fmt.Sprintf("wildcard resource %q on a data service", p))
			}
		}
	}
	return out
}

// objectsOfBucket reports whether p is a key pattern of one of the
// template's buckets: {Bucket.Arn}/prefix/* or arn:{AWS::Partition}:s3:::{Bucket}/prefix/*.
func (t *CFN) objectsOfBucket(p string) bool {
	for _, id := range t.OfType("AWS::S3::Bucket") {
		for _, base := range []string{"{" + id + ".Arn}/", "arn:{AWS::Partition}:s3:::{" + id + "}/", "arn:aws:s3:::{" + id + "}/"} {
			if keys, ok := strings.CutPrefix(p, base); ok && keys != "" && keys != "*" {
				return true
			}
		}
	}
	return false
}

// streamsOfTable reports whether p is {Table.Arn}/stream/* for one of the
// template's tables that has a stream: the form AWS documents for the
// stream actions of an event source mapping (ListStreams included).
func (t *CFN) streamsOfTable(p string) bool {
	id, ok := strings.CutSuffix(p, ".Arn}/stream/*")
	if !ok || !strings.HasPrefix(id, "{") {
		return false
	}
	r, ok := t.Resources[id[1:]]
	return ok && r.Type == "AWS::DynamoDB::Table" && r.Properties["StreamSpecification"] != nil
}

// cfnDecryptsOnlyThroughService is decryptsOnlyThroughService for a
// transformed template: kms:Decrypt alone on the keys of the stack's own
// account and region, under StringEquals kms:ViaService naming SSM or
// Secrets Manager in that region.
func cfnDecryptsOnlyThroughService(actions []string, p string, cond map[string]map[string]any) bool {
	if len(actions) != 1 || !strings.EqualFold(actions[0], "kms:Decrypt") {
		return false
	}
	if p != "arn:{AWS::Partition}:kms:{AWS::Region}:{AWS::AccountId}:key/*" {
		return false
	}
	for key, v := range cond["StringEquals"] {
		if !strings.EqualFold(key, "kms:ViaService") {
			continue
		}
		vias := asList(v)
		if len(vias) == 0 {
			return false
		}
		for _, via := range vias {
			ps := pattern(via)
			if len(ps) != 1 {
				return false
			}
			svc, ok := strings.CutSuffix(ps[0], ".{AWS::Region}.amazonaws.com")
			if !ok || !slices.Contains(keyDecryptServices, svc) {
				return false
			}
		}
		return true
	}
	return false
}

// FunctionLogs reports every Lambda function of a transformed template that
// does not log to a log group of its own, declared in the template with a
// retention (RetentionInDays): without one, Lambda creates
// /aws/lambda/<name> on first use, which keeps logs forever and outlives
// the stack.
func FunctionLogs(t *CFN) []Finding {
	var out []Finding
	owner := map[string]string{}
	for _, id := range t.OfType("AWS::Lambda::Function") {
		cfg, _ := t.Resources[id].Properties["LoggingConfig"].(map[string]any)
		ref, _ := cfg["LogGroup"].(map[string]any)
		group, _ := ref["Ref"].(string)
		lg, ok := t.Resources[group]
		switch {
		case group == "" || !ok || lg.Type != "AWS::Logs::LogGroup":
			out = append(out, Finding{id, "LoggingConfig.LogGroup does not name a log group of the template"})
			continue
		case lg.Properties["RetentionInDays"] == nil:
			out = append(out, Finding{group, "log group without RetentionInDays: its logs never expire"})
		}
		if other, dup := owner[group]; dup {
			out = append(out, Finding{id, "shares log group " + group + " with " + other})
		}
		owner[group] = id
	}
	return out
}
