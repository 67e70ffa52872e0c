package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/issuer"
)

// Defaults, each the API Gateway HTTP API value where one exists.
const (
	DefaultAddr               = "127.0.0.1:3000"
	DefaultAPIID              = "local"
	DefaultMaxBodyBytes       = 10 << 20         // HTTP API payload limit: 10 MB
	DefaultMaxHeaderBytes     = 10240            // HTTP API quota: request line and header values
	DefaultIntegrationTimeout = 30 * time.Second // HTTP API maximum integration timeout
	DefaultIdentitySource     = "$request.header.Authorization"
	// DefaultRouteKey is the route key of the catch-all route.
	DefaultRouteKey = "$default"
)

// Config describes one HTTP API. The local cloud maps the SAM template's
// HttpApi events and authorizers onto it.
type Config struct {
	// Addr is the listen address; DefaultAddr when empty.
	Addr string
	// APIID is reported as requestContext.apiId; DefaultAPIID when empty.
	APIID string
	// Routes of the API. A route whose Path is "$default" is the catch-all.
	Routes []Route
	// Authorizers by name, referenced by Route.Authorizer.
	Authorizers map[string]JWTAuthorizer
	// Invoker runs the route's function synchronously. Required.
	Invoker invoke.Invoker
	// Health reports whether the whole local cloud is ready; it answers
	// GET /healthz. Nil means always ready.
	Health func() bool
	// Issuer, when set, is served on this server under its URL's path
	// (discovery document and JWKS), so the authorizer can fetch its keys
	// from the same address API Gateway would use.
	Issuer *issuer.Issuer
	// Docs, when set, answers GET and HEAD on DocsPath (the API reference
	// page), unless a route of the API is written for that path.
	Docs http.Handler
	// MaxBodyBytes caps request bodies (413 beyond); DefaultMaxBodyBytes
	// when zero.
	MaxBodyBytes int64
	// MaxHeaderBytes caps the combined size of the request line and the
	// header values (431 beyond); DefaultMaxHeaderBytes when zero.
	MaxHeaderBytes int
	// IntegrationTimeout bounds one invocation (503 beyond);
	// DefaultIntegrationTimeout when zero.
	IntegrationTimeout time.Duration
	// HTTPClient fetches discovery documents and key sets; a client with a
	// 5-second timeout when nil.
	HTTPClient *http.Client
	// Logger receives function failures and key-fetch errors, which the
	// client never sees; slog.Default() when nil.
	Logger *slog.Logger
}

// Route sends requests to a function.
type Route struct {
	// Method is an HTTP method or "ANY". Ignored for the $default route.
	Method string
	// Path is a resource path such as "/classes/{class_id}/enrollments",
	// optionally ending in a greedy variable such as "/files/{proxy+}", or
	// "$default".
	Path string
	// FunctionName is the function that handles the route.
	FunctionName string
	// Authorizer names an entry of Config.Authorizers; "" means none.
	Authorizer string
}

// Key is the route key as API Gateway reports it: "GET /pets/{id}" or
// "$default".
func (r Route) Key() string {
	if r.Path == DefaultRouteKey {
		return DefaultRouteKey
	}
	return strings.ToUpper(r.Method) + " " + r.Path
}

// JWTAuthorizer is an API Gateway JWT authorizer.
type JWTAuthorizer struct {
	// Issuer is the expected "iss"; its OIDC discovery document names the
	// key set.
	Issuer string
	// Audience lists accepted "aud" (or, when a token has no aud,
	// "client_id") values; at least one is required.
	Audience []string
	// IdentitySource is where the token is read from:
	// "$request.header.<Name>" or "$request.querystring.<name>";
	// DefaultIdentitySource when empty.
	IdentitySource string
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.APIID == "" {
		c.APIID = DefaultAPIID
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.IntegrationTimeout == 0 {
		c.IntegrationTimeout = DefaultIntegrationTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// validate checks everything but the routes, which the router checks.
func (c *Config) validate() error {
	var errs []error
	if c.Invoker == nil {
		errs = append(errs, errors.New("invoker is required"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes %d is negative", c.MaxBodyBytes))
	}
	if c.MaxHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("max header bytes %d is negative", c.MaxHeaderBytes))
	}
	if c.IntegrationTimeout < 0 {
		errs = append(errs, fmt.Errorf("integration timeout %s is negative", c.IntegrationTimeout))
	}
	for name, a := range c.Authorizers {
		if a.Issuer == "" {
			errs = append(errs, fmt.Errorf("authorizer %q: issuer is required", name))
		}
		if len(a.Audience) == 0 {
			errs = append(errs, fmt.Errorf("authorizer %q: at least one audience is required", name))
		}
		if _, err := parseIdentitySource(a.IdentitySource); err != nil {
			errs = append(errs, fmt.Errorf("authorizer %q: %w", name, err))
		}
	}
	for _, r := range c.Routes {
		if r.Authorizer == "" {
			continue
		}
		if _, ok := c.Authorizers[r.Authorizer]; !ok {
			errs = append(errs, fmt.Errorf("route %q: unknown authorizer %q", r.Key(), r.Authorizer))
		}
	}
	return errors.Join(errs...)
}
