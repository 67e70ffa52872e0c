package gateway

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ClockSkew is how far in the future a token's nbf and iat may lie. Tokens
// are minted by another process (clubctl) whose clock is the same machine's,
// but iat is rounded to whole seconds and a freshly minted token can arrive
// within the same second, so a little tolerance avoids spurious 401s. exp
// gets none: a token is expired the moment its exp is reached, as API
// Gateway documents ("exp must be after the current time").
const ClockSkew = 5 * time.Second

const (
	// keyCacheTTL bounds how long fetched keys are trusted without a refetch.
	keyCacheTTL = time.Hour
	// minRefetchInterval stops a stream of tokens with unknown kids from
	// turning every request into a fetch of the issuer's key set.
	minRefetchInterval = 5 * time.Second
	maxDocumentBytes   = 1 << 20
)

// authError is why a token was refused. Its description goes to the client
// in the www-authenticate header, as API Gateway does; cause, if any, is
// logged only.
type authError struct {
	missing     bool // no token at all: a bare "Bearer" challenge
	description string
	cause       error
}

func (e *authError) Error() string {
	if e.cause != nil {
		return e.description + ": " + e.cause.Error()
	}
	return e.description
}

// challenge is the www-authenticate header value. The form with scope=""
// is what API Gateway sends for an invalid token.
func (e *authError) challenge() string {
	if e.missing {
		return "Bearer"
	}
	return fmt.Sprintf(`Bearer scope="" error="invalid_token" error_description=%q`, e.description)
}

func refuse(description string, cause error) *authError {
	return &authError{description: description, cause: cause}
}

// identitySource says where a token is read from.
type identitySource struct {
	header string // canonical header name, or
	query  string // query string parameter name
}

func parseIdentitySource(s string) (identitySource, error) {
	if s == "" {
		s = DefaultIdentitySource
	}
	if name, ok := strings.CutPrefix(s, "$request.header."); ok && name != "" {
		return identitySource{header: http.CanonicalHeaderKey(name)}, nil
	}
	if name, ok := strings.CutPrefix(s, "$request.querystring."); ok && name != "" {
		return identitySource{query: name}, nil
	}
	return identitySource{}, fmt.Errorf("identity source %q: want $request.header.<name> or $request.querystring.<name>", s)
}

func (s identitySource) token(r *http.Request) string {
	var v string
	if s.header != "" {
		v = r.Header.Get(s.header)
	} else {
		v = r.URL.Query().Get(s.query)
	}
	v = strings.TrimSpace(v)
	// The source holds the token alone or prefixed with "Bearer ".
	const prefix = "bearer"
	if len(v) >= len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
		if rest := v[len(prefix):]; rest == "" || rest[0] == ' ' {
			v = strings.TrimSpace(rest)
		}
	}
	return v
}

// jwtAuthorizer validates tokens as API Gateway's JWT authorizer does:
// RS256 signature by a key of the issuer's JWKS named by kid, then iss,
// aud (or client_id when aud is absent), exp, nbf and iat.
type jwtAuthorizer struct {
	issuer    string
	audiences map[string]bool
	source    identitySource
	keys      *keySet
	now       func() time.Time
	verified  verifiedSignatures
}

// verifiedSignatures remembers the tokens whose RS256 signature was found
// good, with the key that checked it and their claims: a client sends one
// token with every request, and checking its signature again (an RSA
// verification and two JSON decodings) was most of the gateway's CPU under
// load. Only the signature is remembered: the claims (exp, nbf, iat, iss,
// aud) are judged at every request, and a token whose kid no longer names
// the same key is checked again from the start.
type verifiedSignatures struct {
	mu     sync.Mutex
	tokens map[string]verifiedSignature
}

type verifiedSignature struct {
	kid    string
	key    *rsa.PublicKey
	claims jwt.MapClaims
}

// maxVerifiedTokens bounds the memory: the set starts again when full.
const maxVerifiedTokens = 10000

func (v *verifiedSignatures) get(raw string) (verifiedSignature, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.tokens[raw]
	return s, ok
}

func (v *verifiedSignatures) put(raw string, s verifiedSignature) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tokens == nil || len(v.tokens) >= maxVerifiedTokens {
		v.tokens = map[string]verifiedSignature{}
	}
	v.tokens[raw] = s
}

// verifiedToken is what an accepted token passes to the function.
type verifiedToken struct {
	claims map[string]any
	scopes []string
}

func (a *jwtAuthorizer) authorize(ctx context.Context, r *http.Request) (*verifiedToken, *authError) {
	raw := a.source.token(r)
	if raw == "" {
		return nil, &authError{missing: true, description: "the request has no token"}
	}
	if seen, ok := a.verified.get(raw); ok {
		if key, err := a.keys.get(ctx, seen.kid); err == nil && key == seen.key {
			if aerr := a.validateClaims(seen.claims); aerr != nil {
				return nil, aerr
			}
			return &verifiedToken{claims: seen.claims, scopes: scopesOf(seen.claims)}, nil
		}
	}

	// Pin the algorithm before anything trusts the header: "none", HMAC
	// with the public key as the secret and every other algorithm are
	// refused here, whatever key the kid names.
	parser := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}), jwt.WithJSONNumber(), jwt.WithoutClaimsValidation())
	unverified, _, err := parser.ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		return nil, refuse("the token is malformed", err)
	}
	if alg, _ := unverified.Header["alg"].(string); alg != jwt.SigningMethodRS256.Alg() {
		return nil, refuse(fmt.Sprintf("the token is signed with %q, only RS256 is accepted", alg), nil)
	}
	kid, _ := unverified.Header["kid"].(string)
	if kid == "" {
		return nil, refuse("the token has no key id (kid)", nil)
	}
	key, err := a.keys.get(ctx, kid)
	if err != nil {
		return nil, refuse("the token's key could not be found at the issuer", err)
	}

	claims := jwt.MapClaims{}
	if _, err := parser.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return key, nil }); err != nil {
		if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			return nil, refuse("the token signature is invalid", err)
		}
		return nil, refuse("the token is malformed", err)
	}
	a.verified.put(raw, verifiedSignature{kid: kid, key: key, claims: claims})
	if aerr := a.validateClaims(claims); aerr != nil {
		return nil, aerr
	}
	return &verifiedToken{claims: claims, scopes: scopesOf(claims)}, nil
}

func (a *jwtAuthorizer) validateClaims(claims jwt.MapClaims) *authError {
	if iss, _ := claims["iss"].(string); iss != a.issuer {
		return refuse("the token does not have a valid issuer", nil)
	}

	// API Gateway checks client_id only when the token has no aud.
	aud, err := claims.GetAudience()
	if err != nil {
		return refuse("the token does not have a valid audience", err)
	}
	audOK := false
	if len(aud) > 0 {
		for _, v := range aud {
			audOK = audOK || a.audiences[v]
		}
	} else if clientID, _ := claims["client_id"].(string); clientID != "" {
		audOK = a.audiences[clientID]
	}
	if !audOK {
		return refuse("the token does not have a valid audience", nil)
	}

	now := a.now()
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return refuse("the token does not have a valid expiration", err)
	}
	if !now.Before(exp.Time) {
		return refuse("the token has expired", nil)
	}
	nbf, err := claims.GetNotBefore()
	if err != nil {
		return refuse("the token does not have a valid not-before time", err)
	}
	if nbf != nil && nbf.After(now.Add(ClockSkew)) {
		return refuse("the token is not valid yet", nil)
	}
	iat, err := claims.GetIssuedAt()
	if err != nil {
		return refuse("the token does not have a valid issued-at time", err)
	}
	if iat != nil && iat.After(now.Add(ClockSkew)) {
		return refuse("the token was issued in the future", nil)
	}
	return nil
}

// scopesOf reads OAuth scopes from "scope" (space-separated, Cognito access
// tokens) or "scp" (a list or a string, other providers).
func scopesOf(claims jwt.MapClaims) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch v := claims["scp"].(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, s := range v {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// keySet caches the RSA keys of one issuer, fetched through its OIDC
// discovery document. It is safe for concurrent use; fetches are serialised
// so that a burst of requests causes one fetch, not one each.
type keySet struct {
	issuer string
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time // of the last successful fetch
}

func (k *keySet) get(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()

	age := k.now().Sub(k.fetchedAt)
	if key, ok := k.keys[kid]; ok && age < keyCacheTTL {
		return key, nil
	}
	// An unknown kid may mean the issuer rotated its key: refetch, but not
	// more often than minRefetchInterval.
	if k.keys == nil || age >= minRefetchInterval {
		keys, err := k.fetch(ctx)
		if err != nil {
			return nil, err
		}
		k.keys, k.fetchedAt = keys, k.now()
	}
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	return nil, fmt.Errorf("no key with kid %q in the key set of %s", kid, k.issuer)
}

func (k *keySet) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := k.getJSON(ctx, strings.TrimRight(k.issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, fmt.Errorf("fetch discovery document: %w", err)
	}
	if disc.Issuer != k.issuer {
		return nil, fmt.Errorf("discovery document names issuer %q, want %q", disc.Issuer, k.issuer)
	}
	if disc.JWKSURI == "" {
		return nil, errors.New("discovery document has no jwks_uri")
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := k.getJSON(ctx, disc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("fetch key set: %w", err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, jwk := range set.Keys {
		// Keys for other uses or algorithms are skipped, not errors: a key
		// set may legitimately publish them.
		if jwk.Kty != "RSA" || jwk.Kid == "" || (jwk.Use != "" && jwk.Use != "sig") || (jwk.Alg != "" && jwk.Alg != "RS256") {
			continue
		}
		n, errN := base64.RawURLEncoding.DecodeString(jwk.N)
		e, errE := base64.RawURLEncoding.DecodeString(jwk.E)
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		keys[jwk.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys, nil
}

func (k *keySet) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocumentBytes)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: decode: %w", url, err)
	}
	return nil
}
