package securitytest

import (
	"fmt"
	"slices"
	"time"

	"github.com/clubdev/club/localcloud/template"
)

// EncryptionAtRest reports every table, queue and topic that is not
// encrypted at rest with a key the account controls or audits.
func EncryptionAtRest(st *template.Stack) []Finding {
	var out []Finding
	for _, t := range st.Tables {
		if !t.SSEEnabled {
			out = append(out, Finding{t.Source, "DynamoDB table without SSESpecification.SSEEnabled"})
		}
	}
	for _, q := range st.Queues {
		if !q.SQSManagedSSE && q.KMSMasterKeyID == "" {
			out = append(out, Finding{q.Source, "SQS queue without SqsManagedSseEnabled or KmsMasterKeyId"})
		}
	}
	for _, t := range st.Topics {
		if t.KMSMasterKeyID == "" {
			out = append(out, Finding{t.Source, "SNS topic without KmsMasterKeyId"})
		}
	}
	for _, b := range st.Buckets {
		if b.SSEAlgorithm == "" {
			out = append(out, Finding{b.Source, "S3 bucket without BucketEncryption"})
		}
	}
	return out
}

// PrivateBuckets reports S3 buckets that do not block every kind of public
// access: export files are reached only through presigned URLs, so no
// bucket of the stack is ever public.
func PrivateBuckets(st *template.Stack) []Finding {
	var out []Finding
	for _, b := range st.Buckets {
		if !b.PublicAccessBlocked {
			out = append(out, Finding{b.Source, "S3 bucket without a PublicAccessBlockConfiguration that turns all four settings on"})
		}
	}
	return out
}

// MaxTokenValidity bounds how long a stolen ID or access token stays usable.
const MaxTokenValidity = time.Hour

// APIAuth reports HTTP API routes without a JWT authorizer (other than the
// public paths given) and, when the stack creates a Cognito user pool,
// authorizers that trust anything but that pool and its app clients, and
// pool or client settings the API's identity model depends on:
//
//   - e-mail is auto-verified and a changed address needs verification
//     before it replaces the old one (the email claim seeds the address mail
//     goes to);
//   - app clients are public (no secret) and allow neither the plain
//     password flow nor the implicit grant; ID and access tokens live at most
//     MaxTokenValidity; user existence errors are hidden.
func APIAuth(st *template.Stack, publicPaths ...string) []Finding {
	var out []Finding
	report := func(id, format string, args ...any) {
		out = append(out, Finding{id, fmt.Sprintf(format, args...)})
	}
	for _, fn := range st.Functions {
		for _, e := range fn.HTTPAPIEvents {
			if e.Authorizer == "" && !slices.Contains(publicPaths, e.Path) {
				report(fn.Source, "route %s %s (event %s) has no authorizer", e.Method, e.Path, e.Name)
			}
		}
	}
	if len(st.UserPools) == 0 {
		return out
	}

	issuers := map[string]string{} // ProviderURL → pool id
	for _, p := range st.UserPools {
		issuers[p.ProviderURL] = p.ID
		if !slices.Contains(p.AutoVerifiedAttributes, "email") {
			report(p.Source, "e-mail addresses are not verified (AutoVerifiedAttributes)")
		}
		if !slices.Contains(p.VerifyBeforeUpdate, "email") {
			report(p.Source, "a changed e-mail address takes effect before it is verified (UserAttributeUpdateSettings)")
		}
		if p.MinimumPasswordLength < 12 {
			report(p.Source, "passwords may be shorter than 12 characters")
		}
	}
	clients := map[string]string{} // client id → pool id
	for _, c := range st.UserPoolClients {
		clients[c.ClientID] = c.UserPoolID
		if c.GenerateSecret {
			report(c.Source, "a public client must not have a secret")
		}
		for _, flow := range c.ExplicitAuthFlows {
			if flow == "ALLOW_USER_PASSWORD_AUTH" || flow == "USER_PASSWORD_AUTH" || flow == "ALLOW_ADMIN_USER_PASSWORD_AUTH" {
				report(c.Source, "flow %s sends the password itself", flow)
			}
		}
		if slices.Contains(c.AllowedOAuthFlows, "implicit") {
			report(c.Source, "the implicit grant puts tokens in URLs")
		}
		if c.IDTokenValidity > MaxTokenValidity || c.AccessTokenValidity > MaxTokenValidity {
			report(c.Source, "tokens valid longer than %s", MaxTokenValidity)
		}
		if c.PreventUserExistenceErrors != "ENABLED" {
			report(c.Source, "sign-in errors reveal which users exist (PreventUserExistenceErrors)")
		}
		if slices.Contains(c.WriteAttributes, "custom:role") || slices.Contains(c.WriteAttributes, "cognito:groups") {
			report(c.Source, "users may write their own role")
		}
	}
	for _, api := range st.HTTPAPIs {
		for name, a := range api.Authorizers {
			pool, ok := issuers[a.Issuer]
			if !ok {
				report(api.Source, "authorizer %s trusts %q, not the stack's user pool", name, a.Issuer)
				continue
			}
			if len(a.Audience) == 0 {
				report(api.Source, "authorizer %s accepts any audience", name)
			}
			for _, aud := range a.Audience {
				if clients[aud] != pool {
					report(api.Source, "authorizer %s accepts audience %q, which is not an app client of its pool", name, aud)
				}
			}
		}
	}
	return out
}
