package securitytest

import (
	"fmt"
	"slices"
	"strings"
)

// statefulTypes hold data a stack deletion must not take with it.
var statefulTypes = []string{"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Cognito::UserPool"}

// Redeployable reports what stops a stack from deploying again after a
// failed first attempt, or from being deleted cleanly, in a transformed
// template:
//
//   - a stateful resource (table, bucket, user pool) whose DeletionPolicy is
//     not RetainExceptOnCreate: Retain leaves it behind when a first create
//     rolls back, and the next deploy fails on the name that "already
//     exists"; Delete (the default) loses the data with the stack, and a
//     bucket that holds files makes the deletion fail;
//   - a stateful resource whose UpdateReplacePolicy is not Retain;
//   - any other resource with DeletionPolicy Retain (left behind by a
//     failed create);
//   - a user pool with DeletionProtection ACTIVE: the rollback of a failed
//     create cannot delete it, and a pool is left behind on every attempt.
func Redeployable(t *CFN) []Finding {
	var out []Finding
	ids := make([]string, 0, len(t.Resources))
	for id := range t.Resources {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := t.Resources[id]
		report := func(format string, args ...any) { out = append(out, Finding{id, fmt.Sprintf(format, args...)}) }
		if slices.Contains(statefulTypes, r.Type) {
			if r.DeletionPolicy != "RetainExceptOnCreate" {
				report("DeletionPolicy %q: a stateful resource needs RetainExceptOnCreate (kept when the stack is deleted, removed when a first create rolls back)", r.DeletionPolicy)
			}
			if r.UpdateReplacePolicy != "Retain" {
				report("UpdateReplacePolicy %q: a replacement would delete the data (Retain)", r.UpdateReplacePolicy)
			}
		} else if r.DeletionPolicy == "Retain" {
			report("DeletionPolicy Retain: a failed first create leaves it behind (RetainExceptOnCreate or Delete)")
		}
		if r.Type == "AWS::Cognito::UserPool" && r.Properties["DeletionProtection"] == "ACTIVE" {
			report("DeletionProtection ACTIVE: the rollback of a failed create cannot delete the pool")
		}
	}
	return out
}

// TLSOnlyBuckets reports every bucket of a transformed template without a
// bucket policy that denies every request not made over TLS, on the bucket
// and on its objects (Deny, Principal "*", s3:*, Bool aws:SecureTransport
// false).
func TLSOnlyBuckets(t *CFN) []Finding {
	denied := map[string]bool{}
	for _, id := range t.OfType("AWS::S3::BucketPolicy") {
		props := t.Resources[id].Properties
		bucket := pattern(props["Bucket"])
		if len(bucket) != 1 {
			continue
		}
		doc, _ := props["PolicyDocument"].(map[string]any)
		for _, st := range asList(doc["Statement"]) {
			s, _ := st.(map[string]any)
			if s["Effect"] != "Deny" || s["Principal"] != "*" || !slices.Contains(asList(s["Action"]), any("s3:*")) {
				continue
			}
			cond, _ := s["Condition"].(map[string]any)
			b, _ := cond["Bool"].(map[string]any)
			if v := fmt.Sprint(b["aws:SecureTransport"]); v != "false" {
				continue
			}
			var res []string
			for _, r := range asList(s["Resource"]) {
				res = append(res, pattern(r)...)
			}
			name := strings.TrimSuffix(strings.TrimPrefix(bucket[0], "{"), "}")
			if slices.Contains(res, "{"+name+".Arn}") && slices.Contains(res, "{"+name+".Arn}/*") {
				denied[name] = true
			}
		}
	}
	var out []Finding
	for _, id := range t.OfType("AWS::S3::Bucket") {
		if !denied[id] {
			out = append(out, Finding{id, "no bucket policy denies requests without TLS (aws:SecureTransport false) on the bucket and its objects"})
		}
	}
	return out
}

// CORS reports every HTTP API of a transformed template that browsers
// cannot call (no CORS configuration) or that any origin may call: the
// API takes bearer tokens, so its origins are named.
func CORS(t *CFN) []Finding {
	var out []Finding
	for _, id := range t.OfType("AWS::ApiGatewayV2::Api") {
		props := t.Resources[id].Properties
		body, _ := props["Body"].(map[string]any)
		cors, _ := body["x-amazon-apigateway-cors"].(map[string]any)
		if c, ok := props["CorsConfiguration"].(map[string]any); ok {
			cors = c
		}
		if cors == nil {
			out = append(out, Finding{id, "no CORS configuration: browsers cannot call the API"})
			continue
		}
		origins := asList(cors["allowOrigins"])
		if o, ok := cors["AllowOrigins"]; ok {
			origins = asList(o)
		}
		if len(origins) == 0 {
			out = append(out, Finding{id, "CORS names no origin"})
		}
		for _, o := range origins {
			if s, ok := o.(string); !ok || strings.Contains(s, "*") {
				out = append(out, Finding{id, fmt.Sprintf("CORS allows origin %v: name the web app's origins", o)})
			}
		}
	}
	return out
}
