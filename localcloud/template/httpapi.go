package template

import (
	"errors"
	"fmt"
	"strings"
)

// httpAPIRefs gives an HTTP API a deterministic id: its logical ID in lower
// case (real ids are random). The id is also the host label of the API's
// endpoint.
func httpAPIRefs(r *resolver, id string, _ *rawResource, _ string) (*resourceRefs, error) {
	apiID := strings.ToLower(id)
	endpoint := r.opts.HTTPAPIURL
	if endpoint == "" {
		endpoint = fmt.Sprintf("https://%s.execute-api.%s.amazonaws.com", apiID, r.opts.Region)
	}
	return &resourceRefs{ref: apiID, attrs: map[string]string{"ApiEndpoint": endpoint}}, nil
}

type httpAPIProps struct {
	StageName string
	Auth      *struct {
		Authorizers         map[string]jwtAuthorizerProps
		DefaultAuthorizer   string
		EnableIamAuthorizer ignored
	}
	CorsConfiguration         *corsProps
	Description               string
	AccessLogSettings         ignored
	DefaultRouteSettings      ignored
	RouteSettings             ignored
	StageVariables            ignored
	FailOnWarnings            ignored
	DisableExecuteApiEndpoint ignored
	PropagateTags             ignored
	Tags                      ignored
}

type jwtAuthorizerProps struct {
	JwtConfiguration *struct {
		Issuer   string   `json:"issuer"`
		Audience []string `json:"audience"`
	}
	IdentitySource string
}

// corsProps is CorsConfiguration; `CorsConfiguration: true` (allow all) is
// not supported, only the object form.
type corsProps struct {
	AllowOrigins     []string
	AllowHeaders     []string
	AllowMethods     []string
	ExposeHeaders    []string
	AllowCredentials boolValue
	MaxAge           *intValue
}

func buildHTTPAPI(b *builder, in resourceInput) error {
	var p httpAPIProps
	if err := decodeStrict(b.withGlobals("HttpApi", in.props), &p); err != nil {
		return err
	}
	api := HTTPAPI{
		Source:    in.id,
		ID:        in.refs.ref,
		Endpoint:  in.refs.attrs["ApiEndpoint"],
		StageName: p.StageName,
	}
	if api.StageName == "" {
		api.StageName = "$default"
	}
	if a := p.Auth; a != nil {
		api.Authorizers = map[string]JWTAuthorizer{}
		for name, az := range a.Authorizers {
			if az.JwtConfiguration == nil || az.JwtConfiguration.Issuer == "" {
				return fmt.Errorf("Auth.Authorizers.%s: only JWT authorizers with an issuer are supported", name)
			}
			src := az.IdentitySource
			if src == "" {
				src = "$request.header.Authorization"
			}
			api.Authorizers[name] = JWTAuthorizer{
				Issuer:         az.JwtConfiguration.Issuer,
				Audience:       az.JwtConfiguration.Audience,
				IdentitySource: src,
			}
		}
		if d := a.DefaultAuthorizer; d != "" {
			if _, ok := api.Authorizers[d]; !ok {
				return fmt.Errorf("Auth.DefaultAuthorizer %q: no such authorizer", d)
			}
			api.DefaultAuthorizer = d
		}
	}
	if c := p.CorsConfiguration; c != nil {
		api.CORS = &CORS{
			AllowOrigins:     c.AllowOrigins,
			AllowHeaders:     c.AllowHeaders,
			AllowMethods:     c.AllowMethods,
			ExposeHeaders:    c.ExposeHeaders,
			AllowCredentials: bool(c.AllowCredentials),
			MaxAge:           seconds(c.MaxAge.or(0)),
		}
	}
	b.stack.HTTPAPIs = append(b.stack.HTTPAPIs, api)
	return nil
}

// linkHTTPAPIEvents ties every HttpApi event to its API and settles its
// effective authorizer, once every API is known.
func (b *builder) linkHTTPAPIEvents() error {
	byID := map[string]*HTTPAPI{}
	for i := range b.stack.HTTPAPIs {
		byID[b.stack.HTTPAPIs[i].ID] = &b.stack.HTTPAPIs[i]
	}
	for _, ref := range b.httpAPIEvents {
		fn := &b.stack.Functions[ref.function]
		e := &fn.HTTPAPIEvents[ref.event]
		api, ok := byID[ref.apiID]
		if !ok {
			return fmt.Errorf("resource %s (%s): event %s (HttpApi): ApiId %q names no HTTP API of the template", fn.Source, typeFunction, e.Name, ref.apiID)
		}
		e.APISource, e.APIID = api.Source, api.ID
		switch az := ref.explicit; az {
		case "NONE":
			e.Authorizer = ""
		case "":
			e.Authorizer = api.DefaultAuthorizer
		default:
			if _, ok := api.Authorizers[az]; !ok {
				return fmt.Errorf("resource %s (%s): event %s (HttpApi): %w", fn.Source, typeFunction, e.Name,
					errors.New("Auth.Authorizer "+az+" is not an authorizer of "+api.Source))
			}
			e.Authorizer = az
		}
	}
	return nil
}
