package ddbfidelity

import (
	"strings"
)

// maxItemSize is DynamoDB's limit on an item's size (400 KB, counted as for
// request units).
const maxItemSize = 400 * 1024

// maxBatchWrite is the most requests one BatchWriteItem may hold.
const maxBatchWrite = 25

// checkItemSize is DynamoDB's refusal of an item over 400 KB.
func checkItemSize(it item) *answer {
	if itemSize(it) > maxItemSize {
		return validation("Item size has exceeded the maximum allowed size")
	}
	return nil
}

// updateTargets lists the top-level attributes an UpdateExpression sets,
// removes, adds to or deletes from.
func updateTargets(upd string, names map[string]string) []string {
	var out []string
	for clause, actions := range updateClauses(upd) {
		for _, a := range actions {
			var p string
			switch clause {
			case "SET":
				eq := strings.IndexByte(a, '=')
				if eq < 0 {
					continue
				}
				p = a[:eq]
			case "REMOVE":
				p = a
			default:
				f := strings.Fields(a)
				if len(f) == 0 {
					continue
				}
				p = f[0]
			}
			if path, ok := parsePath(p, names); ok {
				out = append(out, path[0].name)
			}
		}
	}
	return out
}

// checkKeyUpdate is DynamoDB's refusal of an update that changes a key
// attribute.
func checkKeyUpdate(t *tableDesc, upd string, names map[string]string) *answer {
	for _, target := range updateTargets(upd, names) {
		for _, k := range t.Keys {
			if target == k {
				return validation("One or more parameter values were invalid: Cannot update attribute " + k + ". This attribute is part of the key")
			}
		}
	}
	return nil
}
