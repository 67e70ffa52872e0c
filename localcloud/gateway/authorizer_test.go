package gateway_test

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/issuer"
)

// forged signs claims like the fixture's issuer would, but with the given
// method and key, keeping the issuer's kid so that only the signature (or
// the algorithm) is wrong.
func forged(t *testing.T, f *fixture, method jwt.SigningMethod, key any) string {
	t.Helper()
	now := time.Now()
	token := jwt.NewWithClaims(method, jwt.MapClaims{
		"iss": f.issuer.URL, "sub": "student-1", "aud": testAudience, "token_use": "id",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	token.Header["kid"] = f.issuer.KeyID
	signed, err := token.SignedString(key)
	require.NoError(t, err)
	return signed
}

func TestAuthorizerRefusesBadTokens(t *testing.T) {
	t.Parallel()

	publicPEM := func() []byte {
		der, err := x509.MarshalPKIXPublicKey(&issuerKey().PublicKey)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}

	tests := []struct {
		name string
		// header builds the Authorization header; "" sends none.
		header func(t *testing.T, f *fixture) string
		// description is part of the www-authenticate error_description;
		// "" expects the bare challenge of a missing token.
		description string
	}{
		{"missing header", func(*testing.T, *fixture) string { return "" }, ""},
		{"bearer without token", func(*testing.T, *fixture) string { return "Bearer " }, ""},
		{"malformed", func(*testing.T, *fixture) string { return "Bearer not.a.jwt" }, "malformed"},
		{"garbage", func(*testing.T, *fixture) string { return "Bearer abc" }, "malformed"},
		{"expired", func(t *testing.T, f *fixture) string {
			return "Bearer " + f.token(t, func(c *issuer.Claims) { c.IssuedAt = time.Now().Add(-2 * time.Hour) })
		}, "the token has expired"},
		{"not yet valid", func(t *testing.T, f *fixture) string {
			return "Bearer " + f.token(t, func(c *issuer.Claims) { c.IssuedAt = time.Now().Add(time.Hour) })
		}, "not valid yet"},
		{"issued in the future", func(t *testing.T, f *fixture) string {
			now := time.Now()
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
				"iss": f.issuer.URL, "sub": "s", "aud": testAudience,
				"iat": now.Add(time.Hour).Unix(), "exp": now.Add(2 * time.Hour).Unix(),
			})
			tok.Header["kid"] = f.issuer.KeyID
			s, err := tok.SignedString(issuerKey())
			require.NoError(t, err)
			return "Bearer " + s
		}, "issued in the future"},
		{"no exp", func(t *testing.T, f *fixture) string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": f.issuer.URL, "sub": "s", "aud": testAudience})
			tok.Header["kid"] = f.issuer.KeyID
			s, err := tok.SignedString(issuerKey())
			require.NoError(t, err)
			return "Bearer " + s
		}, "valid expiration"},
		{"wrong issuer", func(t *testing.T, f *fixture) string {
			// Same key, so the signature verifies: only iss is wrong.
			other, err := issuer.New("http://127.0.0.1:1/other", issuerKey())
			require.NoError(t, err)
			s, err := other.Sign(issuer.Claims{Subject: "s", Audience: testAudience}, time.Hour)
			require.NoError(t, err)
			return "Bearer " + s
		}, "valid issuer"},
		{"wrong audience", func(t *testing.T, f *fixture) string {
			return "Bearer " + f.token(t, func(c *issuer.Claims) { c.Audience = "someone-else" })
		}, "valid audience"},
		{"aud wins over a matching client_id", func(t *testing.T, f *fixture) string {
			return "Bearer " + f.token(t, func(c *issuer.Claims) { c.Audience, c.ClientID = "someone-else", testAudience })
		}, "valid audience"},
		{"neither aud nor client_id", func(t *testing.T, f *fixture) string {
			return "Bearer " + f.token(t, func(c *issuer.Claims) { c.Audience = "" })
		}, "valid audience"},
		{"wrong signature", func(t *testing.T, f *fixture) string {
			return "Bearer " + forged(t, f, jwt.SigningMethodRS256, otherKey())
		}, "signature is invalid"},
		{"unknown key id", func(t *testing.T, f *fixture) string {
			// A well-formed token from an impostor with its own key.
			impostor, err := issuer.New(f.issuer.URL, otherKey())
			require.NoError(t, err)
			s, err := impostor.Sign(issuer.Claims{Subject: "s", Audience: testAudience}, time.Hour)
			require.NoError(t, err)
			return "Bearer " + s
		}, "key could not be found"},
		{"alg none", func(t *testing.T, f *fixture) string {
			return "Bearer " + forged(t, f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType)
		}, "only RS256"},
		{"HS256 keyed with the public key", func(t *testing.T, f *fixture) string {
			return "Bearer " + forged(t, f, jwt.SigningMethodHS256, publicPEM())
		}, "only RS256"},
		{"RS512", func(t *testing.T, f *fixture) string {
			return "Bearer " + forged(t, f, jwt.SigningMethodRS512, issuerKey())
		}, "only RS256"},
		{"signature stripped", func(t *testing.T, f *fixture) string {
			tok := f.token(t)
			return "Bearer " + tok[:strings.LastIndex(tok, ".")+1]
		}, "signature is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			header := http.Header{}
			if h := tt.header(t, f); h != "" {
				header.Set("Authorization", h)
			}
			r := do(t, "POST", f.url+"/classes/c1/enrollments", header, jsonBody(`{}`))
			requireMessage(t, r, http.StatusUnauthorized, "Unauthorized")

			challenge := r.header.Get("Www-Authenticate")
			if tt.description == "" {
				require.Equal(t, "Bearer", challenge)
			} else {
				require.True(t, strings.HasPrefix(challenge, `Bearer scope="" error="invalid_token" error_description="`), challenge)
				require.Contains(t, challenge, tt.description)
			}
			require.Empty(t, f.invoker.Calls(), "the function must not run for a refused token")
		})
	}
}

func TestAuthorizerAcceptsGoodTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header func(t *testing.T, f *fixture) http.Header
	}{
		{"ID token with Bearer prefix", func(t *testing.T, f *fixture) http.Header { return bearer(f.token(t)) }},
		{"token without prefix", func(t *testing.T, f *fixture) http.Header {
			return http.Header{"Authorization": {f.token(t)}}
		}},
		{"lower-case bearer", func(t *testing.T, f *fixture) http.Header {
			return http.Header{"Authorization": {"bearer " + f.token(t)}}
		}},
		{"access token with client_id", func(t *testing.T, f *fixture) http.Header {
			return bearer(f.token(t, func(c *issuer.Claims) { c.Audience, c.ClientID, c.Scope = "", testAudience, "club/read club/write" }))
		}},
		{"issued a moment ahead, within the skew", func(t *testing.T, f *fixture) http.Header {
			return bearer(f.token(t, func(c *issuer.Claims) { c.IssuedAt = time.Now().Add(gateway.ClockSkew / 2) }))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			r := do(t, "POST", f.url+"/classes/c1/enrollments", tt.header(t, f), jsonBody(`{}`))
			require.Equal(t, http.StatusOK, r.status, "body: %s, www-authenticate: %s", r.body, r.header.Get("Www-Authenticate"))
			require.Len(t, f.invoker.Calls(), 1)
		})
	}
}

func TestClaimsReachTheFunctionAsStrings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tok := f.token(t, func(c *issuer.Claims) {
		c.Groups = []string{"student", "teacher"}
		c.Extra = map[string]any{"email_verified": true, "custom:seats": 3}
	})
	r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	calls := f.invoker.Calls()
	require.Len(t, calls, 1)
	auth := calls[0].event.RequestContext.Authorizer
	require.NotNil(t, auth)
	require.NotNil(t, auth.JWT)
	claims := auth.JWT.Claims
	require.Equal(t, "student-1", claims["sub"])
	require.Equal(t, "s1@example.com", claims["email"])
	require.Equal(t, "[student teacher]", claims["cognito:groups"], "lists arrive as API Gateway renders them")
	require.Equal(t, f.issuer.URL, claims["iss"])
	require.Equal(t, testAudience, claims["aud"])
	require.Equal(t, "id", claims["token_use"])
	require.Equal(t, "true", claims["email_verified"])
	require.Equal(t, "3", claims["custom:seats"])
	require.Regexp(t, `^[0-9]+$`, claims["exp"], "numeric dates keep their integer form")
	require.Nil(t, auth.JWT.Scopes)

	// On the wire the claims are a JSON object of strings.
	rc := calls[0].raw["requestContext"].(map[string]any)
	jwtDoc := rc["authorizer"].(map[string]any)["jwt"].(map[string]any)
	require.Equal(t, "[student teacher]", jwtDoc["claims"].(map[string]any)["cognito:groups"])
}

func TestScopesReachTheFunction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tok := f.token(t, func(c *issuer.Claims) { c.Audience, c.ClientID, c.Scope = "", testAudience, "club/read club/write" })
	r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
	require.Equal(t, http.StatusOK, r.status)
	calls := f.invoker.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, []string{"club/read", "club/write"}, calls[0].event.RequestContext.Authorizer.JWT.Scopes)
	require.Equal(t, testAudience, calls[0].event.RequestContext.Authorizer.JWT.Claims["client_id"])
}

func TestUnauthorizedRouteHasNoAuthorizerContext(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// A token on a public route is not validated, and not passed on.
	r := do(t, "POST", f.url+"/webhooks/payments", http.Header{"Authorization": {"Bearer junk"}}, jsonBody(`{}`))
	require.Equal(t, http.StatusOK, r.status)
	calls := f.invoker.Calls()
	require.Len(t, calls, 1)
	require.Nil(t, calls[0].event.RequestContext.Authorizer)
	require.NotContains(t, calls[0].raw["requestContext"], "authorizer")
}

// countingTransport counts requests per path on their way to the issuer.
type countingTransport struct {
	discovery, jwks atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(r.URL.Path, issuer.DiscoveryPath):
		c.discovery.Add(1)
	case strings.HasSuffix(r.URL.Path, issuer.JWKSPath):
		c.jwks.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestKeysAreFetchedThroughDiscoveryAndCached(t *testing.T) {
	t.Parallel()
	counter := &countingTransport{}
	f := setup(t, func(c *gateway.Config) { c.HTTPClient = &http.Client{Transport: counter, Timeout: 5 * time.Second} })

	for range 3 {
		r := do(t, "GET", f.url+"/classes/c1", bearer(f.token(t)), nil)
		require.Equal(t, http.StatusOK, r.status)
	}
	require.EqualValues(t, 1, counter.discovery.Load(), "discovery is fetched once")
	require.EqualValues(t, 1, counter.jwks.Load(), "the key set is fetched once")

	// An unknown kid right after a fetch does not trigger another one.
	impostor, err := issuer.New(f.issuer.URL, otherKey())
	require.NoError(t, err)
	bad, err := impostor.Sign(issuer.Claims{Subject: "s", Audience: testAudience}, time.Hour)
	require.NoError(t, err)
	r := do(t, "GET", f.url+"/classes/c1", bearer(bad), nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.EqualValues(t, 1, counter.jwks.Load())
}

func TestIssuerIsServedByTheGateway(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := do(t, "GET", f.url+"/issuer/.well-known/openid-configuration", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `"`+f.issuer.URL+`"`, jsonField(t, r.body, "issuer"))
	require.JSONEq(t, `"`+f.issuer.JWKSURL()+`"`, jsonField(t, r.body, "jwks_uri"))

	r = do(t, "GET", f.url+"/issuer/.well-known/jwks.json", nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), f.issuer.KeyID)
}

func TestQueryStringIdentitySource(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *gateway.Config) {
		c.Authorizers = map[string]gateway.JWTAuthorizer{
			"cognito": {Issuer: c.Issuer.URL, Audience: []string{testAudience}, IdentitySource: "$request.querystring.access_token"},
		}
	})
	r := do(t, "GET", f.url+"/classes/c1", bearer(f.token(t)), nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "the header is not the identity source")
	r = do(t, "GET", f.url+"/classes/c1?access_token="+f.token(t), nil, nil)
	require.Equal(t, http.StatusOK, r.status)
}

func TestUnreachableIssuerIsRefusedNotHung(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback refuses connections: the key set cannot be fetched.
	const deadIssuer = "http://127.0.0.1:1/issuer"
	f := setup(t, func(c *gateway.Config) {
		c.Authorizers = map[string]gateway.JWTAuthorizer{"cognito": {Issuer: deadIssuer, Audience: []string{testAudience}}}
	})
	dead, err := issuer.New(deadIssuer, issuerKey())
	require.NoError(t, err)
	tok, err := dead.Sign(issuer.Claims{Subject: "s", Audience: testAudience}, time.Hour)
	require.NoError(t, err)

	r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
	requireMessage(t, r, http.StatusUnauthorized, "Unauthorized")
	require.Contains(t, r.header.Get("Www-Authenticate"), "key could not be found")
	require.Empty(t, f.invoker.Calls())
}

// The gateway remembers a token whose signature it checked, so that the
// next request with it skips the RSA verification: the claims are judged
// again at every request, so a remembered token is refused once it expires.
func TestRememberedTokenIsRefusedOnceExpired(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Valid for about five more seconds (whole seconds, from an hour's ttl).
	tok := f.token(t, func(c *issuer.Claims) { c.IssuedAt = time.Now().Add(-time.Hour + 5*time.Second) })
	for range 2 {
		r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	}
	require.Len(t, f.invoker.Calls(), 2)
	deadline := time.Now().Add(time.Minute)
	for {
		r := do(t, "GET", f.url+"/classes/c1", bearer(tok), nil)
		if r.status == http.StatusUnauthorized {
			require.Contains(t, r.header.Get("Www-Authenticate"), "the token has expired")
			break
		}
		require.Equal(t, http.StatusOK, r.status)
		require.False(t, time.Now().After(deadline), "the token was still accepted a minute later")
		time.Sleep(100 * time.Millisecond)
	}
}
