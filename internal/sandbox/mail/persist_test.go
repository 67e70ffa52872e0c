package mail_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sandbox/mail"
)

// The local cloud keeps the sandbox's State across a restart: the messages
// sent, the keys that make a repeated send answer with the same message,
// and an outage that was switched on.
func TestStateSurvivesARestart(t *testing.T) {
	before := setup(t, mail.Options{})
	empty := before.srv.Revision()
	require.Equal(t, empty, before.srv.Revision(), "nothing happened: same revision")
	first := before.send(t, "notify-1", "ada@example.com", "Welcome")
	require.NotEqual(t, empty, before.srv.Revision(), "a send changes the revision")
	sent := before.srv.Revision()
	require.Equal(t, http.StatusAccepted, before.send(t, "notify-1", "ada@example.com", "Welcome").status)
	require.NotEqual(t, sent, before.srv.Revision(), "so does a repeated one (it is counted)")
	require.Equal(t, http.StatusAccepted, first.status, "%v", first.body)
	before.control(t, "/_sandbox/faults", `{"mode":"error"}`)
	require.Equal(t, http.StatusServiceUnavailable, before.send(t, "notify-2", "bob@example.com", "Welcome").status)

	raw, err := json.Marshal(before.srv.State())
	require.NoError(t, err)
	var st mail.State
	require.NoError(t, json.Unmarshal(raw, &st))
	after := setup(t, mail.Options{})
	after.srv.Restore(st)

	require.Len(t, after.messages(t, ""), 1)
	require.Equal(t, http.StatusServiceUnavailable, after.send(t, "notify-2", "bob@example.com", "Welcome").status, "the outage is still on")
	after.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	again := after.send(t, "notify-1", "ada@example.com", "Welcome")
	require.Equal(t, first.body["message_id"], again.body["message_id"], "a repeated send finds the message sent before the restart")
	require.Equal(t, http.StatusAccepted, after.send(t, "notify-2", "bob@example.com", "Welcome").status)
	require.Len(t, after.messages(t, ""), 2)
	require.Equal(t, http.StatusConflict, after.send(t, "notify-1", "ada@example.com", "Another subject").status,
		"the key still remembers its payload")
}
