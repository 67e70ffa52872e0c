// Package issuer is the local cloud's stand-in for an Amazon Cognito user
// pool: an OpenID Connect issuer that signs RS256 JWTs shaped like Cognito's
// (iss, sub, aud or client_id, token_use, email, cognito:groups, iat, nbf,
// exp) and publishes its public key the way every OIDC provider does, so that
// the HTTP API's JWT authorizer verifies local tokens exactly as API Gateway
// verifies Cognito's: discovery document, then jwks_uri, then kid.
//
// The signing key is an RSA-2048 key kept in a PEM file (mode 0600). It is
// generated on first use and reused afterwards, so tokens minted by clubctl
// stay valid across restarts of the local cloud. Creating the key is safe
// when several processes race for it: exactly one key wins and every process
// loads that one. The key id (kid) is the RFC 7638 thumbprint of the public
// key, so it is stable for a given key and changes when the key does.
//
// An Issuer is immutable after construction and safe for concurrent use.
// Its HTTP handler serves two documents under the issuer URL's path:
//
//	GET <path>/.well-known/openid-configuration
//	GET <path>/.well-known/jwks.json
//
// This key is for local development only: anyone who can read the file can
// mint tokens for any identity.
package issuer
