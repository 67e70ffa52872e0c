package api

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Features of Step Functions the local cloud does not have. A call that
// needs one is refused, naming it, rather than answered as an unknown
// operation or carried out on the unqualified state machine.
const (
	FeatureActivities = "Step Functions activities"
	FeatureVersions   = "Step Functions state machine versions"
	FeatureAliases    = "Step Functions state machine aliases"
)

// CodeUnsupported is the error code of those refusals.
const CodeUnsupported = "UnsupportedOperation"

var refusedOperations = map[string]string{
	"CreateActivity": FeatureActivities, "DeleteActivity": FeatureActivities, "DescribeActivity": FeatureActivities,
	"ListActivities": FeatureActivities, "GetActivityTask": FeatureActivities,
	"PublishStateMachineVersion": FeatureVersions, "ListStateMachineVersions": FeatureVersions,
	"DeleteStateMachineVersion": FeatureVersions,
	"CreateStateMachineAlias":   FeatureAliases, "DescribeStateMachineAlias": FeatureAliases,
	"UpdateStateMachineAlias": FeatureAliases, "DeleteStateMachineAlias": FeatureAliases,
	"ListStateMachineAliases": FeatureAliases,
}

// refusal says why the local cloud refuses a call ("" if it does not): an
// operation of a feature it lacks, a state machine published as a version,
// or a version or alias ARN where it knows only state machines.
func refusal(op string, body []byte) string {
	if f, ok := refusedOperations[op]; ok {
		return fmt.Sprintf("%s are not supported by the local cloud (%s)", f, op)
	}
	var in struct {
		Publish            bool   `json:"publish"`
		VersionDescription string `json:"versionDescription"`
		StateMachineArn    string `json:"stateMachineArn"`
	}
	if json.Unmarshal(body, &in) != nil {
		return "" // the operation answers the malformed body itself
	}
	switch op {
	case "CreateStateMachine", "UpdateStateMachine":
		if in.Publish || in.VersionDescription != "" {
			return fmt.Sprintf("%s are not supported by the local cloud (%s with publish or versionDescription)", FeatureVersions, op)
		}
	}
	// arn:aws:states:region:account:stateMachine:name[:version-or-alias]
	if parts := strings.Split(in.StateMachineArn, ":"); len(parts) == 8 && parts[5] == "stateMachine" {
		feature := FeatureAliases
		if strings.Trim(parts[7], "0123456789") == "" {
			feature = FeatureVersions
		}
		return fmt.Sprintf("%s are not supported by the local cloud (%s of %s)", feature, op, in.StateMachineArn)
	}
	return ""
}
