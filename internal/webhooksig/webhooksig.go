package webhooksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the HTTP header that carries the signature.
const Header = "X-Sandbox-Signature"

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock. Verify uses it when given a tolerance of zero or less.
const DefaultTolerance = 5 * time.Minute

// Sentinel errors returned (wrapped) by Verify.
var (
	// ErrMalformedHeader: the header is missing, has no t or no v1, or a
	// value is not a number or not hex.
	ErrMalformedHeader = errors.New("webhooksig: malformed signature header")
	// ErrBadSignature: no v1 value matches the body and the secret.
	ErrBadSignature = errors.New("webhooksig: signature does not match")
	// ErrTooOld: the signature is valid but its timestamp is older than the
	// tolerance (a replayed or long-delayed delivery).
	ErrTooOld = errors.New("webhooksig: signature timestamp too old")
	// ErrFromFuture: the timestamp is ahead of the receiver's clock by more
	// than the tolerance (clock skew or a forged timestamp).
	ErrFromFuture = errors.New("webhooksig: signature timestamp in the future")
	// ErrNoSecret: the receiver has no secret. Anyone can compute an HMAC
	// keyed with nothing, so nothing verifies under an empty secret.
	ErrNoSecret = errors.New("webhooksig: no secret to verify with")
)

// Sign returns the header value for body signed with secret at time t.
// It is deterministic: the same inputs give the same header.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// Verify checks that header is a valid signature of body under secret and
// that its timestamp is within tolerance of now (DefaultTolerance when
// tolerance <= 0). It checks the signature before the timestamp, so an
// ErrTooOld or ErrFromFuture result means the body itself is authentic. An
// empty secret verifies nothing (ErrNoSecret).
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return ErrNoSecret
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, sigs, err := parse(header)
	if err != nil {
		return err
	}
	want := mac(secret, ts, body)
	matched := false
	for _, sig := range sigs {
		// Check every candidate so the time taken does not depend on
		// which one matched.
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return ErrBadSignature
	}
	unix, _ := strconv.ParseInt(ts, 10, 64) // parse already validated it
	age := now.Sub(time.Unix(unix, 0))
	switch {
	case age > tolerance:
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrTooOld, age.Round(time.Second), tolerance)
	case -age > tolerance:
		return fmt.Errorf("%w: signed %s ahead, tolerance %s", ErrFromFuture, (-age).Round(time.Second), tolerance)
	}
	return nil
}

// parse splits "t=...,v1=...[,v1=...]" into the timestamp as it was signed
// and the decoded v1 signatures.
func parse(header string) (ts string, sigs [][]byte, err error) {
	if strings.TrimSpace(header) == "" {
		return "", nil, fmt.Errorf("%w: empty", ErrMalformedHeader)
	}
	for part := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return "", nil, fmt.Errorf("%w: %q is not key=value", ErrMalformedHeader, part)
		}
		switch key {
		case "t":
			if ts != "" {
				return "", nil, fmt.Errorf("%w: more than one t", ErrMalformedHeader)
			}
			if _, perr := strconv.ParseInt(value, 10, 64); perr != nil || value == "" {
				return "", nil, fmt.Errorf("%w: t=%q is not a unix time", ErrMalformedHeader, value)
			}
			ts = value
		case "v1":
			sig, derr := hex.DecodeString(value)
			if derr != nil || len(sig) != sha256.Size {
				return "", nil, fmt.Errorf("%w: v1 is not a hex SHA-256 MAC", ErrMalformedHeader)
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" {
		return "", nil, fmt.Errorf("%w: no t", ErrMalformedHeader)
	}
	if len(sigs) == 0 {
		return "", nil, fmt.Errorf("%w: no v1", ErrMalformedHeader)
	}
	return ts, sigs, nil
}

func mac(secret []byte, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}
