package issuer

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Well-known paths, relative to the issuer URL. The JWKS path is Cognito's.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/.well-known/jwks.json"
)

// Issuer signs tokens with one RSA key and publishes its public half.
type Issuer struct {
	// URL is the issuer identifier: the "iss" claim of every token and the
	// base of the well-known documents, for example
	// http://127.0.0.1:3000/issuer. It has no trailing slash.
	URL string
	// KeyID is the "kid" header of every token and of the published key.
	KeyID string

	key  *rsa.PrivateKey
	path string // URL's path, "" for an issuer at the root
	now  func() time.Time
}

// New returns an issuer identified by issuerURL that signs with key.
func New(issuerURL string, key *rsa.PrivateKey) (*Issuer, error) {
	if key == nil {
		return nil, errors.New("issuer: nil key")
	}
	if key.N.BitLen() < KeyBits {
		return nil, fmt.Errorf("issuer: RSA key of %d bits is too short, need at least %d", key.N.BitLen(), KeyBits)
	}
	issuerURL = strings.TrimRight(issuerURL, "/")
	u, err := url.Parse(issuerURL)
	if err != nil {
		return nil, fmt.Errorf("issuer: parse URL %q: %w", issuerURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("issuer: URL %q must be an absolute http(s) URL without query or fragment", issuerURL)
	}
	return &Issuer{
		URL:   issuerURL,
		KeyID: Thumbprint(&key.PublicKey),
		key:   key,
		path:  u.EscapedPath(),
		now:   time.Now,
	}, nil
}

// Open returns an issuer identified by issuerURL whose key is stored at
// keyPath, generating the key on first use (see LoadOrCreateKey).
func Open(issuerURL, keyPath string) (*Issuer, error) {
	key, err := LoadOrCreateKey(keyPath)
	if err != nil {
		return nil, err
	}
	return New(issuerURL, key)
}

// Path is the path component of the issuer URL ("" or for example
// "/issuer"), under which Handler serves the well-known documents.
func (i *Issuer) Path() string { return i.path }

// PublicKey is the key that verifies this issuer's tokens.
func (i *Issuer) PublicKey() *rsa.PublicKey { return &i.key.PublicKey }

// DiscoveryURL is the address of the OpenID configuration document.
func (i *Issuer) DiscoveryURL() string { return i.URL + DiscoveryPath }

// JWKSURL is the address of the key set (the discovery document's jwks_uri).
func (i *Issuer) JWKSURL() string { return i.URL + JWKSPath }

// Claims are the claims of a token, in Cognito's shape. Cognito ID tokens
// carry the app client id in "aud"; access tokens carry it in "client_id"
// and a "scope". Set Audience, ClientID or both.
type Claims struct {
	Subject  string   // "sub", required
	Audience string   // "aud"
	ClientID string   // "client_id"
	TokenUse string   // "token_use": "id" or "access"; default "id" if Audience is set, else "access"
	Email    string   // "email"
	Groups   []string // "cognito:groups"
	Scope    string   // "scope", space-separated
	// IssuedAt is the moment the token is issued and starts to be valid
	// ("iat", "nbf", "auth_time"); the zero value means now. Tests set it to
	// mint tokens that are expired or not yet valid.
	IssuedAt time.Time
	// Extra claims are copied into the token; they may not override the
	// claims above or iss, exp and jti.
	Extra map[string]any
}

// Sign returns a compact RS256 JWT with this issuer's kid in its header,
// valid from Claims.IssuedAt for ttl. Numeric dates are whole seconds, as
// RFC 7519 NumericDate values usually are.
func (i *Issuer) Sign(c Claims, ttl time.Duration) (string, error) {
	if c.Subject == "" {
		return "", errors.New("issuer: sign: subject is required")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("issuer: sign: ttl must be positive, got %s", ttl)
	}
	issued := c.IssuedAt
	if issued.IsZero() {
		issued = i.now()
	}
	issued = issued.Truncate(time.Second)

	claims := jwt.MapClaims{}
	for k, v := range c.Extra {
		claims[k] = v
	}
	tokenUse := c.TokenUse
	if tokenUse == "" {
		tokenUse = "access"
		if c.Audience != "" {
			tokenUse = "id"
		}
	}
	set := map[string]any{
		"iss":       i.URL,
		"sub":       c.Subject,
		"token_use": tokenUse,
		"iat":       issued.Unix(),
		"nbf":       issued.Unix(),
		"auth_time": issued.Unix(),
		"exp":       issued.Add(ttl).Unix(),
		"jti":       randomID(),
	}
	if c.Audience != "" {
		set["aud"] = c.Audience
	}
	if c.ClientID != "" {
		set["client_id"] = c.ClientID
	}
	if c.Email != "" {
		set["email"] = c.Email
	}
	if len(c.Groups) > 0 {
		set["cognito:groups"] = c.Groups
	}
	if c.Scope != "" {
		set["scope"] = c.Scope
	}
	for k, v := range set {
		if _, clash := claims[k]; clash {
			return "", fmt.Errorf("issuer: sign: extra claim %q clashes with a standard claim", k)
		}
		claims[k] = v
	}

	token := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	token.Header["kid"] = i.KeyID
	signed, err := token.SignedString(i.key)
	if err != nil {
		return "", fmt.Errorf("issuer: sign: %w", err)
	}
	return signed, nil
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// Discovery is the subset of the OpenID Provider Metadata this issuer serves.
type Discovery struct {
	Issuer                           string   `json:"issuer"`
	JWKSURI                          string   `json:"jwks_uri"`
	ResponseTypesSupported           []string `json:"response_types_supported"`
	SubjectTypesSupported            []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported"`
	ClaimsSupported                  []string `json:"claims_supported"`
}

// Discovery returns the OpenID configuration document.
func (i *Issuer) Discovery() Discovery {
	return Discovery{
		Issuer:                           i.URL,
		JWKSURI:                          i.JWKSURL(),
		ResponseTypesSupported:           []string{"token"},
		SubjectTypesSupported:            []string{"public"},
		IDTokenSigningAlgValuesSupported: []string{"RS256"},
		ClaimsSupported: []string{
			"iss", "sub", "aud", "client_id", "exp", "iat", "nbf", "auth_time",
			"jti", "token_use", "email", "cognito:groups", "scope",
		},
	}
}

// JWKS returns the key set: the one public key of this issuer.
func (i *Issuer) JWKS() JWKS {
	return JWKS{Keys: []JWK{publicJWK(&i.key.PublicKey, i.KeyID)}}
}

// Handler serves the discovery document and the key set at their full paths
// (Path() + DiscoveryPath and Path() + JWKSPath) and answers 404 to anything
// else, so it can be mounted on a mux at those two paths or used on its own.
func (i *Issuer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+i.path+DiscoveryPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, i.Discovery())
	})
	mux.HandleFunc("GET "+i.path+JWKSPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, i.JWKS())
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// Verifiers may cache the keys; a short max-age keeps a rotated local
	// key from being trusted for long after the file changed.
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client went away
}
