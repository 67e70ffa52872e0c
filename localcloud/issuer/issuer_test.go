package issuer_test

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/issuer"
)

// The test key is generated once: RSA key generation is the slow part.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	dir, err := os.MkdirTemp("", "issuer-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	key, err := issuer.LoadOrCreateKey(filepath.Join(dir, "key.pem"))
	if err != nil {
		panic(err)
	}
	return key
})

func TestLoadOrCreateKeyCreatesOnceAndReuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".club", "issuer-key.pem")

	first, err := issuer.LoadOrCreateKey(path)
	require.NoError(t, err)
	require.Equal(t, issuer.KeyBits, first.N.BitLen())

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the private key is readable by its owner only")

	second, err := issuer.LoadOrCreateKey(path)
	require.NoError(t, err)
	require.True(t, first.Equal(second), "a later run reuses the stored key")

	loaded, err := issuer.LoadKey(path)
	require.NoError(t, err)
	require.True(t, first.Equal(loaded))
}

func TestLoadOrCreateKeyConcurrentCallersAgree(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "issuer-key.pem")

	const callers = 3
	keys := make([]*rsa.PrivateKey, callers)
	var wg sync.WaitGroup
	for n := range callers {
		wg.Go(func() {
			key, err := issuer.LoadOrCreateKey(path)
			if err == nil {
				keys[n] = key
			}
		})
	}
	wg.Wait()
	for n := range callers {
		require.NotNil(t, keys[n], "caller %d failed", n)
		require.True(t, keys[0].Equal(keys[n]), "caller %d got a different key", n)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "temporary key files are removed")
}

func TestLoadKeyErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	_, err := issuer.LoadKey(notPEM)
	require.ErrorContains(t, err, "no PEM block")

	_, err = issuer.LoadKey(filepath.Join(dir, "missing.pem"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestThumbprintMatchesRFC7638Example(t *testing.T) {
	t.Parallel()
	// RFC 7638 §3.1.
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	require.NoError(t, err)
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}
	require.Equal(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", issuer.Thumbprint(pub))
}

func TestNewValidatesURL(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "not a url", "ftp://host/x", "http://host/x?q=1", "/relative"} {
		_, err := issuer.New(bad, testKey())
		require.Error(t, err, "URL %q", bad)
	}
	iss, err := issuer.New("http://127.0.0.1:3000/issuer/", testKey())
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:3000/issuer", iss.URL, "a trailing slash is dropped")
	require.Equal(t, "/issuer", iss.Path())
}

func TestSignProducesCognitoShapedRS256Token(t *testing.T) {
	t.Parallel()
	iss, err := issuer.New("http://127.0.0.1:3000/issuer", testKey())
	require.NoError(t, err)

	issued := time.Now().Add(-time.Minute).Truncate(time.Second)
	signed, err := iss.Sign(issuer.Claims{
		Subject:  "student-1",
		Audience: "club-local",
		Email:    "s1@example.com",
		Groups:   []string{"student"},
		IssuedAt: issued,
		Extra:    map[string]any{"custom:tier": "gold"},
	}, time.Hour)
	require.NoError(t, err)

	claims := jwt.MapClaims{}
	token, err := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"})).ParseWithClaims(signed, claims,
		func(*jwt.Token) (any, error) { return iss.PublicKey(), nil })
	require.NoError(t, err)
	require.True(t, token.Valid)
	require.Equal(t, "RS256", token.Header["alg"])
	require.Equal(t, iss.KeyID, token.Header["kid"])

	require.Equal(t, "http://127.0.0.1:3000/issuer", claims["iss"])
	require.Equal(t, "student-1", claims["sub"])
	require.Equal(t, "club-local", claims["aud"])
	require.Equal(t, "id", claims["token_use"])
	require.Equal(t, "s1@example.com", claims["email"])
	require.Equal(t, []any{"student"}, claims["cognito:groups"])
	require.Equal(t, "gold", claims["custom:tier"])
	require.InDelta(t, float64(issued.Unix()), claims["iat"], 0)
	require.InDelta(t, float64(issued.Unix()), claims["nbf"], 0)
	require.InDelta(t, float64(issued.Add(time.Hour).Unix()), claims["exp"], 0)
	require.NotEmpty(t, claims["jti"])
	require.NotContains(t, claims, "client_id")
}

func TestSignAccessTokenAndErrors(t *testing.T) {
	t.Parallel()
	iss, err := issuer.New("http://127.0.0.1:3000/issuer", testKey())
	require.NoError(t, err)

	signed, err := iss.Sign(issuer.Claims{Subject: "svc", ClientID: "club-local", Scope: "club/read"}, time.Minute)
	require.NoError(t, err)
	claims := jwt.MapClaims{}
	_, err = jwt.NewParser().ParseWithClaims(signed, claims, func(*jwt.Token) (any, error) { return iss.PublicKey(), nil })
	require.NoError(t, err)
	require.Equal(t, "access", claims["token_use"])
	require.Equal(t, "club-local", claims["client_id"])
	require.Equal(t, "club/read", claims["scope"])
	require.NotContains(t, claims, "aud")

	tests := []struct {
		name   string
		claims issuer.Claims
		ttl    time.Duration
		want   string
	}{
		{"no subject", issuer.Claims{Audience: "a"}, time.Hour, "subject is required"},
		{"zero ttl", issuer.Claims{Subject: "s"}, 0, "ttl must be positive"},
		{"extra overrides iss", issuer.Claims{Subject: "s", Extra: map[string]any{"iss": "evil"}}, time.Hour, "clashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := iss.Sign(tt.claims, tt.ttl)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestHandlerServesDiscoveryAndJWKS(t *testing.T) {
	t.Parallel()
	// The issuer URL must name the server's port, so listen first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	iss, err := issuer.New("http://"+ln.Addr().String()+"/issuer", testKey())
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(iss.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	var disc issuer.Discovery
	getJSON(t, iss.DiscoveryURL(), &disc)
	require.Equal(t, iss.URL, disc.Issuer)
	require.Equal(t, srv.URL+"/issuer/.well-known/jwks.json", disc.JWKSURI)
	require.Equal(t, []string{"RS256"}, disc.IDTokenSigningAlgValuesSupported)

	var set issuer.JWKS
	getJSON(t, disc.JWKSURI, &set)
	require.Len(t, set.Keys, 1)
	k := set.Keys[0]
	require.Equal(t, "RSA", k.Kty)
	require.Equal(t, "RS256", k.Alg)
	require.Equal(t, "sig", k.Use)
	require.Equal(t, iss.KeyID, k.Kid)
	n, err := base64.RawURLEncoding.DecodeString(k.N)
	require.NoError(t, err)
	e, err := base64.RawURLEncoding.DecodeString(k.E)
	require.NoError(t, err)
	published := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	require.True(t, iss.PublicKey().Equal(published), "the JWKS publishes the signing key's public half")

	resp, err := http.Get(srv.URL + "/other/.well-known/jwks.json")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}
