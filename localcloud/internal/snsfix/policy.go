package snsfix

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Features the local cloud refuses in filter policies where the engine
// cannot evaluate them as SNS: kumo evaluates only exact strings, exists,
// prefix and anything-but of strings, on message attributes (and delivers
// everything for a policy it cannot read). moto 5.2 evaluates numeric
// matching, suffix, equals-ignore-case, anything-but with a prefix and
// FilterPolicyScope MessageBody as SNS does in the conformance cases, so on
// moto those pass (WithMotoDelivery); nested keys and $or are refused on
// both, unchecked.
const (
	FeatureNumeric         = "SNS filter policy numeric matching"
	FeatureSuffix          = "SNS filter policy suffix matching"
	FeatureIgnoreCase      = "SNS filter policy equals-ignore-case matching"
	FeatureAnythingButMore = "SNS filter policy anything-but with numbers, prefix or suffix"
	FeatureMessageBody     = "SNS FilterPolicyScope MessageBody"
	FeatureNested          = "SNS filter policy nested keys"
	FeatureOr              = "SNS filter policy $or"
	FeatureOther           = "SNS filter policy operator"
	FeatureStringArray     = "SNS message attributes of type String.Array"
	FeatureBinary          = "SNS message attributes of type Binary"
	FeatureNumber          = "SNS message attributes of type Number"
)

// policyError is a filter policy the local cloud refuses: either one AWS
// refuses too (invalid), or one it cannot evaluate as AWS (a feature).
type policyError struct {
	feature string // "" for an invalid policy
	detail  string
}

func (e *policyError) Error() string {
	if e.feature == "" {
		return "Invalid parameter: FilterPolicy: " + e.detail
	}
	return fmt.Sprintf("Invalid parameter: FilterPolicy: %s is not supported by the local cloud (%s); the local cloud evaluates exact strings, exists, prefix and anything-but of strings on message attributes", e.feature, e.detail)
}

// checkPolicy accepts a filter policy the local cloud evaluates as SNS does
// (https://docs.aws.amazon.com/sns/latest/dg/sns-subscription-filter-policies.html)
// and names what it cannot; engine holds the features the engine itself
// evaluates as SNS does.
func checkPolicy(policy, scope string, engine map[string]bool) *policyError {
	if scope == "MessageBody" && !engine[FeatureMessageBody] {
		return &policyError{feature: FeatureMessageBody, detail: "policies on the message body"}
	}
	if scope != "" && scope != "MessageAttributes" && scope != "MessageBody" {
		return &policyError{detail: fmt.Sprintf("FilterPolicyScope %q is neither MessageAttributes nor MessageBody", scope)}
	}
	if policy == "" {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(policy), &keys); err != nil || keys == nil {
		return &policyError{detail: "failed to parse JSON: the policy must be an object"}
	}
	for key, raw := range keys {
		if err := checkKey(key, raw, engine); err != nil {
			return err
		}
	}
	return nil
}

func checkKey(key string, raw json.RawMessage, engine map[string]bool) *policyError {
	if key == "$or" {
		return &policyError{feature: FeatureOr, detail: "key $or"}
	}
	var values []json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return &policyError{feature: FeatureNested, detail: "key " + key}
		}
		return &policyError{detail: fmt.Sprintf("%s: the value must be an array", key)}
	}
	for _, v := range values {
		if err := checkCondition(key, v); err != nil && (err.feature == "" || !engine[err.feature]) {
			return err
		}
	}
	return nil
}

func checkCondition(key string, raw json.RawMessage) *policyError {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		return nil // exact string
	case len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')):
		return &policyError{feature: FeatureNumeric, detail: fmt.Sprintf("%s: exact number %s", key, raw)}
	case len(raw) == 0 || raw[0] != '{':
		return &policyError{feature: FeatureOther, detail: fmt.Sprintf("%s: the value %s", key, raw)}
	}
	var op map[string]json.RawMessage
	if err := json.Unmarshal(raw, &op); err != nil || len(op) != 1 {
		return &policyError{detail: fmt.Sprintf("%s: an operator object has exactly one operator", key)}
	}
	for name, arg := range op {
		switch name {
		case "exists":
			var b bool
			if json.Unmarshal(arg, &b) != nil {
				return &policyError{detail: key + ": exists takes true or false"}
			}
		case "prefix":
			var s string
			if json.Unmarshal(arg, &s) != nil {
				return &policyError{feature: FeatureAnythingButMore, detail: key + ": prefix of a non-string"}
			}
		case "anything-but":
			var s string
			var ss []string
			if json.Unmarshal(arg, &s) != nil && json.Unmarshal(arg, &ss) != nil {
				return &policyError{feature: FeatureAnythingButMore, detail: fmt.Sprintf("%s: anything-but %s", key, arg)}
			}
		case "numeric":
			return &policyError{feature: FeatureNumeric, detail: key}
		case "suffix":
			return &policyError{feature: FeatureSuffix, detail: key}
		case "equals-ignore-case":
			return &policyError{feature: FeatureIgnoreCase, detail: key}
		default:
			return &policyError{feature: FeatureOther, detail: fmt.Sprintf("%s: operator %q", key, name)}
		}
	}
	return nil
}
