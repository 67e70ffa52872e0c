package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaskText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"personal keys of an event", `{"event_id":"e-1","data":{"student_id":"s-1","email":"ada@example.com","display_name":"Ada Lovelace"}}`,
			`{"data":{"display_name":"A***","email":"a***@example.com","student_id":"s-1"},"event_id":"e-1"}`},
		{"an address in free text", `provider refused mail to bob.smith@example.org: mailbox full`, `provider refused mail to b***@example.org: mailbox full`},
		{"nothing personal", `{"class_id":"c-1","capacity":3}`, `{"capacity":3,"class_id":"c-1"}`},
		{"not JSON, no address", `plain reason`, `plain reason`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, MaskText(tc.in))
		})
	}
}

func TestMaskAttributes(t *testing.T) {
	t.Parallel()
	got := MaskAttributes(map[string]string{"type": "enrollment.created", "captured_email": "ada@example.com", "dlq_reason": "550 for eve@example.net"})
	require.Equal(t, map[string]string{"type": "enrollment.created", "captured_email": "a***@example.com", "dlq_reason": "550 for e***@example.net"}, got)
}
