package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/issuer"
)

// signWith signs claims with any method and key under the given header
// fields, starting from a token the fixture's issuer would accept.
func signWith(t *testing.T, f *fixture, method jwt.SigningMethod, key any, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	now := time.Now()
	all := jwt.MapClaims{
		"iss": f.issuer.URL, "sub": "student-1", "aud": testAudience, "token_use": "id",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range claims {
		if v == nil {
			delete(all, k)
		} else {
			all[k] = v
		}
	}
	tok := jwt.NewWithClaims(method, all)
	tok.Header["kid"] = f.issuer.KeyID
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// unsigned builds "<header>.<claims>." by hand, for algorithm spellings the
// JWT library refuses to produce.
func unsigned(t *testing.T, f *fixture, alg string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	now := time.Now().Unix()
	return enc(map[string]any{"alg": alg, "typ": "JWT", "kid": f.issuer.KeyID}) + "." +
		enc(map[string]any{"iss": f.issuer.URL, "sub": "student-1", "aud": testAudience, "iat": now, "exp": now + 3600}) + "."
}

// jwkOf is the public JWK of an RSA key, as an attacker would embed it.
func jwkOf(t *testing.T) map[string]any {
	t.Helper()
	pub := otherKey().PublicKey
	return map[string]any{
		"kty": "RSA", "kid": issuer.Thumbprint(&pub),
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// TestAuthorizerRefusesAlgorithmConfusion extends TestAuthorizerRefusesBadTokens
// with the other ways to smuggle a key or an algorithm past the verifier.
// Each token is otherwise valid: only the algorithm or key source is wrong.
func TestAuthorizerRefusesAlgorithmConfusion(t *testing.T) {
	t.Parallel()
	publicDER := func(t *testing.T) []byte {
		der, err := x509.MarshalPKIXPublicKey(&issuerKey().PublicKey)
		require.NoError(t, err)
		return der
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)

	tests := []struct {
		name        string
		token       func(t *testing.T, f *fixture) string
		description string
	}{
		// Algorithm names the library does not know are refused as malformed,
		// before any key is looked up.
		{"alg None", func(t *testing.T, f *fixture) string { return unsigned(t, f, "None") }, "malformed"},
		{"alg NONE", func(t *testing.T, f *fixture) string { return unsigned(t, f, "NONE") }, "malformed"},
		{"alg rs256 in lower case", func(t *testing.T, f *fixture) string { return unsigned(t, f, "rs256") }, "malformed"},
		{"no alg at all", func(t *testing.T, f *fixture) string { return unsigned(t, f, "") }, "malformed"},
		{"HS256 keyed with the public key's DER", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodHS256, publicDER(t), nil, nil)
		}, "only RS256"},
		{"HS512 keyed with the public key's modulus", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodHS512, issuerKey().N.Bytes(), nil, nil)
		}, "only RS256"},
		{"PS256 with the issuer's own key", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodPS256, issuerKey(), nil, nil)
		}, "only RS256"},
		{"ES256", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodES256, ecKey, nil, nil)
		}, "only RS256"},
		{"an embedded jwk is not a key source", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodRS256, otherKey(), nil, map[string]any{"jwk": jwkOf(t)})
		}, "signature is invalid"},
		{"a jku pointing elsewhere is not followed", func(t *testing.T, f *fixture) string {
			return signWith(t, f, jwt.SigningMethodRS256, otherKey(), nil, map[string]any{
				"jku": "http://127.0.0.1:1/attacker/jwks.json", "kid": issuer.Thumbprint(&otherKey().PublicKey),
			})
		}, "key could not be found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			r := do(t, "GET", f.url+"/classes/c1", bearer(tt.token(t, f)), nil)
			requireMessage(t, r, http.StatusUnauthorized, "Unauthorized")
			require.Contains(t, r.header.Get("Www-Authenticate"), tt.description)
			require.Empty(t, f.invoker.Calls())
		})
	}
}

// TestAuthorizerClaimBoundaries: the checks API Gateway documents, near
// their edges. exp gets no tolerance; nbf and iat get ClockSkew; iss matches
// exactly; aud may be a list.
func TestAuthorizerClaimBoundaries(t *testing.T) {
	t.Parallel()
	// Time only moves forward while a case runs, so a margin is needed only
	// where a later check could cross the boundary: "inside" cases sit
	// below a boundary by inside, "beyond" cases above it by beyond.
	const inside, beyond = 3 * time.Second, 15 * time.Second
	tests := []struct {
		name   string
		claims func(f *fixture, now time.Time) jwt.MapClaims
		// description is "" for an accepted token.
		description string
	}{
		// Expired by less than the skew: exp gets no tolerance.
		{"expired a moment ago", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"iat": now.Add(-time.Hour).Unix(), "nbf": now.Add(-time.Hour).Unix(), "exp": now.Add(-gateway.ClockSkew + inside).Unix()}
		}, "the token has expired"},
		{"expiring soon", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"exp": now.Add(beyond).Unix()}
		}, ""},
		{"not before, past the skew", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"nbf": now.Add(gateway.ClockSkew + beyond).Unix(), "iat": nil}
		}, "not valid yet"},
		{"not before, inside the skew", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"nbf": now.Add(gateway.ClockSkew - inside).Unix(), "iat": nil}
		}, ""},
		{"issued past the skew", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"iat": now.Add(gateway.ClockSkew + beyond).Unix(), "nbf": nil}
		}, "issued in the future"},
		{"exp as a string", func(_ *fixture, now time.Time) jwt.MapClaims {
			return jwt.MapClaims{"exp": "9999999999"}
		}, "valid expiration"},
		{"issuer with a trailing slash", func(f *fixture, _ time.Time) jwt.MapClaims {
			return jwt.MapClaims{"iss": f.issuer.URL + "/"}
		}, "valid issuer"},
		{"issuer in another case", func(f *fixture, _ time.Time) jwt.MapClaims {
			return jwt.MapClaims{"iss": strings.ToUpper(f.issuer.URL)}
		}, "valid issuer"},
		{"no issuer", func(*fixture, time.Time) jwt.MapClaims { return jwt.MapClaims{"iss": nil} }, "valid issuer"},
		{"audience list with ours", func(*fixture, time.Time) jwt.MapClaims {
			return jwt.MapClaims{"aud": []string{"someone-else", testAudience}}
		}, ""},
		{"audience list without ours", func(*fixture, time.Time) jwt.MapClaims {
			return jwt.MapClaims{"aud": []string{"someone-else", strings.ToUpper(testAudience)}}
		}, "valid audience"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tok := signWith(t, f, jwt.SigningMethodRS256, issuerKey(), tt.claims(f, time.Now()), nil)
			r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
			if tt.description == "" {
				require.Equal(t, http.StatusOK, r.status, r.header.Get("Www-Authenticate"))
				require.Len(t, f.invoker.Calls(), 1)
				return
			}
			requireMessage(t, r, http.StatusUnauthorized, "Unauthorized")
			require.Contains(t, r.header.Get("Www-Authenticate"), tt.description)
			require.Empty(t, f.invoker.Calls())
		})
	}
}

func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	const limit = 2048
	f := setup(t, func(c *gateway.Config) { c.MaxHeaderBytes = limit })

	// httptest requests have no network headers: the request line, the host
	// and X-Pad are all that is counted.
	request := func(pad int) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/webhooks/payments", strings.NewReader("{}"))
		used := len("POST /webhooks/payments HTTP/1.1") + len(req.Host)
		req.Header.Set("X-Pad", strings.Repeat("p", pad-used))
		rec := httptest.NewRecorder()
		f.gw.ServeHTTP(rec, req)
		return rec
	}
	rec := request(limit + 1)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, rec.Code)
	require.JSONEq(t, `{"message":"Request Header Fields Too Large"}`, rec.Body.String())
	require.Empty(t, f.invoker.Calls(), "an oversized request never reaches the function")

	rec = request(limit)
	require.Equal(t, http.StatusOK, rec.Code, "headers at the limit are accepted")
	require.Len(t, f.invoker.Calls(), 1)
}

func TestDefaultHeaderLimitIsAPIGateways(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.Equal(t, 10240, gateway.DefaultMaxHeaderBytes)
	for _, size := range []int{gateway.DefaultMaxHeaderBytes, 1 << 20} {
		h := bearer(f.token(t))
		h.Set("X-Pad", strings.Repeat("p", size))
		r := do(t, "GET", f.url+"/classes/c1", h, nil)
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, r.status, "%d bytes of header", size)
	}
	// A bloated token is refused the same way, before it is parsed.
	tok := f.token(t, func(c *issuer.Claims) { c.Extra = map[string]any{"padding": strings.Repeat("x", 12<<10)} })
	r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, r.status)
	require.Empty(t, f.invoker.Calls())

	r = do(t, "GET", f.url+"/classes/c1", bearer(f.token(t)), nil)
	require.Equal(t, http.StatusOK, r.status, "an ordinary request passes")
}

func TestNegativeHeaderLimitIsInvalid(t *testing.T) {
	t.Parallel()
	_, err := gateway.New(gateway.Config{Invoker: &fakeInvoker{}, MaxHeaderBytes: -1})
	require.ErrorContains(t, err, "max header bytes -1 is negative")
}
