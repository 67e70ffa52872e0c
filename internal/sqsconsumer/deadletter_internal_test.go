package sqsconsumer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeadLetterReasonRedactsAddresses(t *testing.T) {
	t.Parallel()
	got := reason(errors.New("mail rejected for ada.lovelace@example.com: mailbox full"))
	require.NotContains(t, got, "ada.lovelace@example.com")
	require.Contains(t, got, "mailbox full")
}
