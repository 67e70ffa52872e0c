package webhooksig_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/webhooksig"
)

func TestSignMatchesTheDocumentedScheme(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_test")
	body := []byte(`{"event_id":"evt_1"}`)
	at := time.Unix(1767225600, 0)

	h := hmac.New(sha256.New, secret)
	h.Write([]byte("1767225600." + string(body)))
	want := "t=1767225600,v1=" + hex.EncodeToString(h.Sum(nil))

	require.Equal(t, want, webhooksig.Sign(secret, at, body))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := []byte("whsec_test")
	body := []byte(`{"event_id":"evt_1","type":"payment.succeeded"}`)
	signedAt := time.Unix(1767225600, 0)
	valid := webhooksig.Sign(secret, signedAt, body)
	other := webhooksig.Sign([]byte("rotated"), signedAt, body)
	ts := fmt.Sprint(signedAt.Unix())

	tests := []struct {
		name      string
		secret    []byte
		header    string
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{name: "valid", secret: secret, header: valid, body: body, now: signedAt},
		{name: "valid within tolerance", secret: secret, header: valid, body: body, now: signedAt.Add(4*time.Minute + 59*time.Second)},
		{name: "valid with spaces", secret: secret, header: "t=" + ts + ", v1=" + valid[len("t="+ts+",v1="):], body: body, now: signedAt},
		{name: "one of several v1 matches", secret: secret, header: other + "," + valid[len("t="+ts+","):], body: body, now: signedAt},
		{name: "unknown keys are ignored", secret: secret, header: valid + ",v0=deadbeef", body: body, now: signedAt},
		{name: "tampered body", secret: secret, header: valid, body: []byte(`{"event_id":"evt_2","type":"payment.succeeded"}`), now: signedAt, want: webhooksig.ErrBadSignature},
		{name: "wrong secret", secret: []byte("wrong"), header: valid, body: body, now: signedAt, want: webhooksig.ErrBadSignature},
		{name: "timestamp changed", secret: secret, header: "t=1767225601" + valid[len("t="+ts):], body: body, now: signedAt, want: webhooksig.ErrBadSignature},
		{name: "old timestamp", secret: secret, header: valid, body: body, now: signedAt.Add(5*time.Minute + time.Second), want: webhooksig.ErrTooOld},
		{name: "custom tolerance", secret: secret, header: valid, body: body, now: signedAt.Add(11 * time.Second), tolerance: 10 * time.Second, want: webhooksig.ErrTooOld},
		{name: "future timestamp", secret: secret, header: valid, body: body, now: signedAt.Add(-6 * time.Minute), want: webhooksig.ErrFromFuture},
		{name: "empty header", secret: secret, header: "", body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "no t", secret: secret, header: valid[len("t="+ts+","):], body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "no v1", secret: secret, header: "t=" + ts, body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "t not a number", secret: secret, header: "t=yesterday" + valid[len("t="+ts):], body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "v1 not hex", secret: secret, header: "t=" + ts + ",v1=zz", body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "v1 too short", secret: secret, header: "t=" + ts + ",v1=abcd", body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "two t", secret: secret, header: "t=" + ts + "," + valid, body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		{name: "no key=value", secret: secret, header: "garbage", body: body, now: signedAt, want: webhooksig.ErrMalformedHeader},
		// Anyone can sign with an empty key: a receiver without a secret
		// accepts nothing, not even a header that matches.
		{name: "empty secret", secret: nil, header: webhooksig.Sign(nil, signedAt, body), body: body, now: signedAt, want: webhooksig.ErrNoSecret},
		{name: "zero-length secret", secret: []byte{}, header: webhooksig.Sign([]byte{}, signedAt, body), body: body, now: signedAt, want: webhooksig.ErrNoSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := webhooksig.Verify(tc.secret, tc.header, tc.body, tc.now, tc.tolerance)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}
