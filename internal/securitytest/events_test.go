package securitytest_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/events/examples"
	"github.com/clubdev/club/internal/securitytest"
)

// Events carry ids, never an e-mail address or a name (docs/security.md,
// personal data): every stored example of every version, and every member
// the Go types can write.
func TestEventsCarryNoPersonalData(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			found, err := securitytest.PersonalData(ex.JSON)
			require.NoError(t, err)
			require.Empty(t, found)

			env, err := events.Decode(ex.JSON)
			require.NoError(t, err)
			p, err := env.Payload()
			require.NoError(t, err)
			members := map[string]any{}
			for _, name := range jsonMembers(reflect.TypeOf(p)) {
				members[name] = "x"
			}
			doc, err := json.Marshal(members)
			require.NoError(t, err)
			found, err = securitytest.PersonalData(doc)
			require.NoError(t, err)
			require.Empty(t, found, "the type %T can write personal data", p)
		})
		covered[fmt.Sprintf("%s.v%d", ex.Type, ex.Version)] = true
	}
	for _, tv := range events.Supported() {
		require.True(t, covered[tv.String()], "no stored example of %s: the check above cannot see it", tv)
	}
}

// jsonMembers lists the JSON member names of a struct type, nested structs
// included.
func jsonMembers(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
		for _, inner := range jsonMembers(f.Type) {
			out = append(out, name+"_"+inner)
		}
	}
	return out
}

func TestPersonalDataFindsAddressesAndNames(t *testing.T) {
	t.Parallel()
	found, err := securitytest.PersonalData([]byte(`{
		"event_id": "e-1",
		"data": {
			"student_id": "s-1",
			"email": "x",
			"displayName": "Ann",
			"display_name": "Ann",
			"notes": ["call ann@example.com", "fine"],
			"contact": {"phone": "+1 555"},
			"kind": "roster_export"
		}
	}`))
	require.NoError(t, err)
	require.Equal(t, []string{
		"data.contact.phone: member name announces personal data",
		"data.displayName: member name announces personal data",
		"data.display_name: member name announces personal data",
		"data.email: member name announces personal data",
		"data.notes[0]: value holds an e-mail address",
	}, found)
}
