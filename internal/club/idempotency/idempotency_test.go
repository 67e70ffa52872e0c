package idempotency_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
)

func TestValidateKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key   string
		valid bool
	}{
		{"", false},
		{"1234567", false},
		{"12345678", true},
		{strings.Repeat("k", 128), true},
		{strings.Repeat("k", 129), false},
		{"6f1c2d3e-0a1b-4c5d-8e9f-aabbccddeeff", true},
		{"has space", false},
		{"tab\there1", false},
		{"ключ-ключ-ключ", false},
		{"~!@#$%^&*()_+", true},
	}
	for _, tt := range tests {
		err := idempotency.ValidateKey(tt.key)
		if tt.valid {
			require.NoError(t, err, "%q", tt.key)
		} else {
			require.ErrorIs(t, err, club.ErrIdempotencyKeyRequired, "%q", tt.key)
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(method, path, body, caller string) string {
		t.Helper()
		s, err := idempotency.Fingerprint(method, path, []byte(body), caller)
		require.NoError(t, err)
		return s
	}
	base := fp("POST", "/classes/c-1/enrollments", `{"a":1,"b":[true,null]}`, "s-1")

	same := map[string]string{
		"key order":  fp("POST", "/classes/c-1/enrollments", `{"b":[true,null],"a":1}`, "s-1"),
		"whitespace": fp("POST", "/classes/c-1/enrollments", " {\n\"a\" : 1, \"b\":[ true , null ]}\n", "s-1"),
	}
	for name, got := range same {
		require.Equal(t, base, got, name)
	}
	differ := map[string]string{
		"method":      fp("PUT", "/classes/c-1/enrollments", `{"a":1,"b":[true,null]}`, "s-1"),
		"path":        fp("POST", "/classes/c-2/enrollments", `{"a":1,"b":[true,null]}`, "s-1"),
		"body":        fp("POST", "/classes/c-1/enrollments", `{"a":2,"b":[true,null]}`, "s-1"),
		"number text": fp("POST", "/classes/c-1/enrollments", `{"a":1.0,"b":[true,null]}`, "s-1"),
		"caller":      fp("POST", "/classes/c-1/enrollments", `{"a":1,"b":[true,null]}`, "s-2"),
		"boundaries":  fp("POST", "/classes/c-1/enrollment", `{"a":1,"b":[true,null]}`, "ss-1"),
	}
	for name, got := range differ {
		require.NotEqual(t, base, got, name)
	}

	require.Equal(t, fp("POST", "/x", "", "s"), fp("POST", "/x", "{}", "s"), "absent body equals {}")
	require.Equal(t, fp("POST", "/x", "  \n", "s"), fp("POST", "/x", "{ }", "s"))

	for _, bad := range []string{`{`, `{"a":1} {"b":2}`, `nope`} {
		_, err := idempotency.Fingerprint("POST", "/x", []byte(bad), "s")
		require.Error(t, err, bad)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	rec := idempotency.Record{Caller: "s-1", Key: "key-12345", Fingerprint: "fp-1",
		Response: idempotency.Response{Status: 201, Body: []byte(`{"ok":true}`)}}

	resp, err := rec.Replay("fp-1")
	require.NoError(t, err)
	require.Equal(t, rec.Response, resp)

	_, err = rec.Replay("fp-2")
	require.ErrorIs(t, err, club.ErrIdempotencyKeyReused)
}
