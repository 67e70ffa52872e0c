package issuer

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
)

// KeyBits is the size of generated keys. RSA-2048 is what Cognito uses.
const KeyBits = 2048

// LoadOrCreateKey returns the RSA private key stored at path, generating and
// storing a new one (PKCS #8 PEM, mode 0600, parent directory created with
// mode 0700) when the file does not exist. It is safe against concurrent
// callers in other processes: the new key is written to a temporary file and
// hard-linked into place, which fails if another process got there first, in
// which case that process's key is loaded and returned.
func LoadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	key, err := LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}

	key, err = rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return nil, fmt.Errorf("generate issuer key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode issuer key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create issuer key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".issuer-key-*.pem") // created with mode 0600
	if err != nil {
		return nil, fmt.Errorf("create issuer key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write issuer key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write issuer key file: %w", err)
	}
	// Link, unlike rename, never replaces an existing file: if another
	// process stored its key meanwhile, keep that one so that every token
	// already signed with it stays valid.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadKey(path)
		}
		return nil, fmt.Errorf("store issuer key: %w", err)
	}
	return key, nil
}

// LoadKey reads an RSA private key from a PEM file (PKCS #8 "PRIVATE KEY" or
// PKCS #1 "RSA PRIVATE KEY"). A missing file yields an error matching
// fs.ErrNotExist.
func LoadKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read issuer key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("read issuer key %s: no PEM block", path)
	}
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse issuer key %s: %w", path, err)
		}
		key, ok := parsed.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("parse issuer key %s: %T is not an RSA key", path, parsed)
		}
		return key, nil
	case "RSA PRIVATE KEY":
		key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse issuer key %s: %w", path, err)
		}
		return key, nil
	default:
		return nil, fmt.Errorf("parse issuer key %s: unexpected PEM block %q", path, block.Type)
	}
}

// JWK is one JSON Web Key (RFC 7517) as published in a JWKS.
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func publicJWK(pub *rsa.PublicKey, kid string) JWK {
	return JWK{
		Kty: "RSA",
		Kid: kid,
		Use: "sig",
		Alg: "RS256",
		N:   b64(pub.N.Bytes()),
		E:   b64(big.NewInt(int64(pub.E)).Bytes()),
	}
}

// Thumbprint returns the RFC 7638 JWK thumbprint (SHA-256, base64url) of an
// RSA public key. It serves as the key id.
func Thumbprint(pub *rsa.PublicKey) string {
	// RFC 7638 §3.2: the required members in lexicographic order, no spaces.
	canonical, _ := json.Marshal(struct {
		E   string `json:"e"`
		Kty string `json:"kty"`
		N   string `json:"n"`
	}{
		E:   b64(big.NewInt(int64(pub.E)).Bytes()),
		Kty: "RSA",
		N:   b64(pub.N.Bytes()),
	})
	sum := sha256.Sum256(canonical)
	return b64(sum[:])
}
