package esm

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

func TestPatternMatches(t *testing.T) {
	t.Parallel()

	// One event with every JSON type, nesting and arrays.
	const event = `{
		"eventName": "INSERT",
		"source": "Club.Orders",
		"count": 5,
		"price": 12.5,
		"zero": 0,
		"active": true,
		"nothing": null,
		"empty": "",
		"tags": ["blue", "green"],
		"codes": [3, 7],
		"none": [],
		"dynamodb": {
			"NewImage": {"type": {"S": "order.placed"}, "qty": {"N": "3"}},
			"Keys": {"pk": {"S": "ORDER#1"}}
		},
		"lines": [{"sku": "A1", "qty": 1}, {"sku": "B2", "qty": 4}]
	}`

	tests := []struct {
		name    string
		pattern string
		want    bool
	}{
		// Exact values.
		{"string equal", `{"eventName": ["INSERT"]}`, true},
		{"string differs", `{"eventName": ["MODIFY"]}`, false},
		{"string is case sensitive", `{"eventName": ["insert"]}`, false},
		{"one of several", `{"eventName": ["MODIFY", "INSERT"]}`, true},
		{"number equal", `{"count": [5]}`, true},
		{"number compares numerically", `{"count": [5.0]}`, true},
		{"number does not equal its string", `{"count": ["5"]}`, false},
		{"string does not equal a number", `{"dynamodb": {"NewImage": {"qty": {"N": [3]}}}}`, false},
		{"boolean", `{"active": [true]}`, true},
		{"boolean differs", `{"active": [false]}`, false},
		{"null matches null", `{"nothing": [null]}`, true},
		{"null does not match a missing field", `{"missing": [null]}`, false},
		{"null does not match empty string", `{"empty": [null]}`, false},
		{"empty string", `{"empty": [""]}`, true},
		{"missing field", `{"missing": ["x"]}`, false},

		// Nesting and arrays.
		{"nested field", `{"dynamodb": {"NewImage": {"type": {"S": ["order.placed"]}}}}`, true},
		{"nested field differs", `{"dynamodb": {"NewImage": {"type": {"S": ["member.joined"]}}}}`, false},
		{"nested pattern on a leaf", `{"eventName": {"S": ["INSERT"]}}`, false},
		{"leaf pattern on an object", `{"dynamodb": ["x"]}`, false},
		{"array value matches any element", `{"tags": ["green"]}`, true},
		{"array value with no matching element", `{"tags": ["red"]}`, false},
		{"array of numbers", `{"codes": [7]}`, true},
		{"array of objects", `{"lines": {"sku": ["B2"]}}`, true},
		{"array of objects, fields from one element", `{"lines": {"sku": ["B2"], "qty": [4]}}`, true},
		{"array of objects, fields from different elements", `{"lines": {"sku": ["A1"], "qty": [4]}}`, false},
		{"all keys must match", `{"eventName": ["INSERT"], "count": [6]}`, false},
		{"all keys match", `{"eventName": ["INSERT"], "count": [5], "active": [true]}`, true},

		// prefix and suffix.
		{"prefix", `{"source": [{"prefix": "Club."}]}`, true},
		{"prefix differs", `{"source": [{"prefix": "club."}]}`, false},
		{"prefix ignoring case", `{"source": [{"prefix": {"equals-ignore-case": "club."}}]}`, true},
		{"prefix on a number", `{"count": [{"prefix": "5"}]}`, false},
		{"nested prefix", `{"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "ORDER#"}]}}}}`, true},
		{"suffix", `{"source": [{"suffix": ".Orders"}]}`, true},
		{"suffix differs", `{"source": [{"suffix": ".Members"}]}`, false},
		{"suffix ignoring case", `{"source": [{"suffix": {"equals-ignore-case": ".ORDERS"}}]}`, true},
		{"equals-ignore-case", `{"eventName": [{"equals-ignore-case": "insert"}]}`, true},
		{"equals-ignore-case differs", `{"eventName": [{"equals-ignore-case": "remove"}]}`, false},

		// anything-but.
		{"anything-but string", `{"eventName": [{"anything-but": "REMOVE"}]}`, true},
		{"anything-but the value", `{"eventName": [{"anything-but": "INSERT"}]}`, false},
		{"anything-but list", `{"eventName": [{"anything-but": ["INSERT", "MODIFY"]}]}`, false},
		{"anything-but list without the value", `{"eventName": [{"anything-but": ["REMOVE", "MODIFY"]}]}`, true},
		{"anything-but number", `{"count": [{"anything-but": 4}]}`, true},
		{"anything-but the number", `{"count": [{"anything-but": 5}]}`, false},
		{"anything-but prefix", `{"source": [{"anything-but": {"prefix": "Club."}}]}`, false},
		{"anything-but other prefix", `{"source": [{"anything-but": {"prefix": "Shop."}}]}`, true},
		{"anything-but suffix", `{"source": [{"anything-but": {"suffix": ".Orders"}}]}`, false},
		{"anything-but equals-ignore-case", `{"eventName": [{"anything-but": {"equals-ignore-case": ["insert"]}}]}`, false},
		{"anything-but on a missing field", `{"missing": [{"anything-but": "x"}]}`, false},
		{"anything-but with an array value", `{"tags": [{"anything-but": "blue"}]}`, true},

		// numeric.
		{"numeric equal", `{"count": [{"numeric": ["=", 5]}]}`, true},
		{"numeric not equal", `{"count": [{"numeric": ["=", 6]}]}`, false},
		{"numeric greater", `{"count": [{"numeric": [">", 4]}]}`, true},
		{"numeric greater, boundary", `{"count": [{"numeric": [">", 5]}]}`, false},
		{"numeric greater or equal, boundary", `{"count": [{"numeric": [">=", 5]}]}`, true},
		{"numeric less", `{"count": [{"numeric": ["<", 5]}]}`, false},
		{"numeric less or equal", `{"count": [{"numeric": ["<=", 5]}]}`, true},
		{"numeric range", `{"price": [{"numeric": [">", 10, "<=", 20]}]}`, true},
		{"numeric range, upper first", `{"price": [{"numeric": ["<", 20, ">=", 12.5]}]}`, true},
		{"numeric outside range", `{"price": [{"numeric": [">", 12.5, "<", 20]}]}`, false},
		{"numeric zero", `{"zero": [{"numeric": ["=", 0]}]}`, true},
		{"numeric on a string", `{"eventName": [{"numeric": [">", 0]}]}`, false},
		{"numeric on a DynamoDB number (a string)", `{"dynamodb": {"NewImage": {"qty": {"N": [{"numeric": [">", 0]}]}}}}`, false},
		{"numeric on an array value", `{"codes": [{"numeric": [">", 5]}]}`, true},

		// exists.
		{"exists true", `{"eventName": [{"exists": true}]}`, true},
		{"exists true on a missing field", `{"missing": [{"exists": true}]}`, false},
		{"exists false on a missing field", `{"missing": [{"exists": false}]}`, true},
		{"exists false on a present field", `{"eventName": [{"exists": false}]}`, false},
		{"exists true on null", `{"nothing": [{"exists": true}]}`, true},
		{"exists true on empty array", `{"none": [{"exists": true}]}`, false},
		{"exists false on empty array", `{"none": [{"exists": false}]}`, true},
		{"exists true on an object", `{"dynamodb": [{"exists": true}]}`, false},
		{"exists false under a missing parent", `{"dynamodb": {"OldImage": {"type": [{"exists": false}]}}}`, true},
		{"exists true under a missing parent", `{"dynamodb": {"OldImage": {"type": [{"exists": true}]}}}`, false},
		{"nested exists", `{"dynamodb": {"NewImage": {"type": {"S": [{"exists": true}]}}}}`, true},

		// $or.
		{"$or first branch", `{"$or": [{"eventName": ["INSERT"]}, {"count": [99]}]}`, true},
		{"$or second branch", `{"$or": [{"eventName": ["REMOVE"]}, {"count": [5]}]}`, true},
		{"$or no branch", `{"$or": [{"eventName": ["REMOVE"]}, {"count": [99]}]}`, false},
		{"$or with another key", `{"active": [false], "$or": [{"eventName": ["INSERT"]}, {"count": [5]}]}`, false},
		{"nested $or", `{"dynamodb": {"$or": [{"OldImage": {"type": {"S": ["x"]}}}, {"NewImage": {"type": {"S": ["order.placed"]}}}]}}`, true},
		{"mixed matchers in a list", `{"eventName": ["MODIFY", {"prefix": "INS"}]}`, true},
	}

	var ev any
	require.NoError(t, json.Unmarshal([]byte(event), &ev))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := compilePattern([]byte(tt.pattern))
			require.NoError(t, err)
			require.Equal(t, tt.want, p.matches(ev))
		})
	}
}

func TestPatternRejectsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, pattern, wantErr string
	}{
		{"not JSON", `{"a": [`, "not valid JSON"},
		{"not an object", `["a"]`, "must be a JSON object"},
		{"empty", `{}`, "must not be empty"},
		{"trailing data", `{"a": ["x"]} {}`, "trailing data"},
		{"leaf not an array", `{"a": "x"}`, "a leaf must be an array"},
		{"empty matcher list", `{"a": []}`, "must not be empty"},
		{"empty nested pattern", `{"a": {}}`, "must not be empty"},
		{"unknown operator", `{"a": [{"wildcard": "x*"}]}`, `unsupported operator "wildcard"`},
		{"two operators in one matcher", `{"a": [{"prefix": "x", "suffix": "y"}]}`, "exactly one operator"},
		{"array matcher", `{"a": [["x"]]}`, "unsupported matcher"},
		{"prefix not a string", `{"a": [{"prefix": 1}]}`, "prefix takes a string"},
		{"exists not a boolean", `{"a": [{"exists": "yes"}]}`, "exists takes true or false"},
		{"numeric odd arguments", `{"a": [{"numeric": [">", 1, "<"]}]}`, "operator/number pairs"},
		{"numeric bad operator", `{"a": [{"numeric": ["!=", 1]}]}`, `unsupported operator "!="`},
		{"numeric string bound", `{"a": [{"numeric": [">", "1"]}]}`, "expected an operator and a number"},
		{"numeric two lower bounds", `{"a": [{"numeric": [">", 1, ">=", 2]}]}`, "more than one lower bound"},
		{"numeric equal in a range", `{"a": [{"numeric": ["=", 1, "<", 2]}]}`, "cannot be combined"},
		{"anything-but empty list", `{"a": [{"anything-but": []}]}`, "must not be empty"},
		{"anything-but nested list", `{"a": [{"anything-but": [["x"]]}]}`, "takes strings or numbers"},
		{"anything-but unknown operator", `{"a": [{"anything-but": {"numeric": [">", 1]}}]}`, `does not support operator "numeric"`},
		{"$or with one branch", `{"$or": [{"a": ["x"]}]}`, "at least two patterns"},
		{"$or not objects", `{"$or": ["a", "b"]}`, "non-empty object"},
		{"error names the path", `{"dynamodb": {"NewImage": {"type": {"S": "x"}}}}`, "dynamodb.NewImage.type.S"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := compilePattern([]byte(tt.pattern))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestFilterSet(t *testing.T) {
	t.Parallel()

	t.Run("at most five filters", func(t *testing.T) {
		t.Parallel()
		six := make([]string, 6)
		for i := range six {
			six[i] = `{"eventName": ["INSERT"]}`
		}
		_, err := compileFilters(six)
		require.ErrorContains(t, err, "at most 5")
	})

	t.Run("error names the filter", func(t *testing.T) {
		t.Parallel()
		_, err := compileFilters([]string{`{"a": ["x"]}`, `{"a": "x"}`})
		require.ErrorContains(t, err, "filter 2")
	})

	t.Run("filters are OR'ed and match a marshalled stream record", func(t *testing.T) {
		t.Parallel()
		set, err := compileFilters([]string{
			`{"eventName": ["REMOVE"]}`,
			`{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"type": {"S": ["order.placed"]}}}}`,
		})
		require.NoError(t, err)
		record := func(name, typ string) any {
			rec := events.DynamoDBEventRecord{
				EventName: name,
				Change: events.DynamoDBStreamRecord{NewImage: map[string]events.DynamoDBAttributeValue{
					"type": events.NewStringAttribute(typ),
				}},
			}
			raw, err := json.Marshal(rec)
			require.NoError(t, err)
			var v any
			require.NoError(t, json.Unmarshal(raw, &v))
			return v
		}
		require.True(t, set.matches(record("INSERT", "order.placed")))
		require.True(t, set.matches(record("REMOVE", "anything")))
		require.False(t, set.matches(record("INSERT", "member.joined")))
		require.False(t, set.matches(record("MODIFY", "order.placed")))
	})

	// The stream poller matches a record without its images when no
	// filter names "dynamodb"; a filter that does must be seen, also
	// inside a top-level $or.
	t.Run("names the top-level fields its patterns look at", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			filters []string
			want    bool
		}{
			{[]string{`{"eventName": ["INSERT"]}`}, false},
			{[]string{`{"eventName": ["INSERT"]}`, `{"userIdentity": {"type": ["Service"]}}`}, false},
			{[]string{`{"eventName": ["INSERT"]}`, `{"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "A"}]}}}}`}, true},
			{[]string{`{"dynamodb": [{"exists": true}]}`}, true},
			{[]string{`{"$or": [{"eventName": ["REMOVE"]}, {"dynamodb": {"NewImage": {"type": {"S": ["x"]}}}}]}`}, true},
			{[]string{`{"awsRegion": ["us-east-1"], "$or": [{"eventName": ["REMOVE"]}, {"eventName": ["INSERT"]}]}`}, false},
		} {
			set, err := compileFilters(tc.filters)
			require.NoError(t, err)
			require.Equal(t, tc.want, set.names("dynamodb"), "%v", tc.filters)
		}
	})

	t.Run("no filters pass everything", func(t *testing.T) {
		t.Parallel()
		set, err := compileFilters(nil)
		require.NoError(t, err)
		require.True(t, set.matches(map[string]any{}))
	})
}
