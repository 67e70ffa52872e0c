package clubctl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/localcloud/issuer"
)

// Roles are the values of cognito:groups the API understands.
var Roles = []string{"student", "teacher", "operator"}

// maxTokenTTL is Cognito's longest ID token validity.
const maxTokenTTL = 24 * time.Hour

type tokenOptions struct {
	sub      string
	role     string
	email    string
	ttl      time.Duration
	audience string
}

// tokenOutput is the --json form of the token command's result.
type tokenOutput struct {
	Token     string    `json:"token"`
	TokenType string    `json:"token_type"`
	Subject   string    `json:"sub"`
	Role      string    `json:"role"`
	Email     string    `json:"email,omitempty"`
	Audience  string    `json:"audience"`
	Issuer    string    `json:"issuer"`
	ExpiresAt time.Time `json:"expires_at"`
}

func newTokenCommand(g *Globals) *cobra.Command {
	var o tokenOptions
	cmd := &cobra.Command{
		Use:   "token --sub ID --role student|teacher|operator [--email E] [--ttl D] [--audience A]",
		Short: "Mint a JWT the local HTTP API accepts",
		Long: `token signs an ID token with the local cloud's issuer key, shaped like an Amazon
Cognito ID token: iss is the local issuer, aud the API's audience, sub the given id,
cognito:groups holds the role, and email is set when given. The local HTTP API's JWT
authorizer accepts it exactly as API Gateway accepts Cognito's tokens.

The issuer URL, audience and key file come from the stack file; the local cloud must
have run at least once so that the key exists. Only the token is printed, so the
output can be captured in a shell variable.`,
		Example: `  TOKEN=$(clubctl token --sub student-1 --role student --email s1@example.com)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/classes/c-1

  clubctl token --sub op-1 --role operator --ttl 15m --json`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true, // the use line lists them
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runToken(g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.sub, "sub", "", "user id, the token's sub claim (required)")
	f.StringVar(&o.role, "role", "", "role, the token's cognito:groups: "+strings.Join(Roles, ", ")+" (required)")
	f.StringVar(&o.email, "email", "", "e-mail address, the token's email claim")
	f.DurationVar(&o.ttl, "ttl", time.Hour, "how long the token is valid, at most 24h")
	f.StringVar(&o.audience, "audience", "", "aud claim (default: the stack's jwt_audience)")
	_ = cmd.MarkFlagRequired("sub")
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

func (o tokenOptions) validate() error {
	var errs []error
	if strings.TrimSpace(o.sub) == "" || strings.ContainsAny(o.sub, " \t\r\n") {
		errs = append(errs, fmt.Errorf("--sub %q must be a non-empty id without spaces", o.sub))
	}
	if !slices.Contains(Roles, o.role) {
		errs = append(errs, fmt.Errorf("--role %q must be one of %s", o.role, strings.Join(Roles, "|")))
	}
	if o.email != "" && !strings.Contains(o.email, "@") {
		errs = append(errs, fmt.Errorf("--email %q is not an e-mail address", o.email))
	}
	if o.ttl <= 0 || o.ttl > maxTokenTTL {
		errs = append(errs, fmt.Errorf("--ttl %s must be positive and at most %s", o.ttl, maxTokenTTL))
	}
	if err := errors.Join(errs...); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

func runToken(g *Globals, o tokenOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	stack, err := g.LoadStack()
	if err != nil {
		return err
	}
	keyPath := stack.IssuerKeyPath(g.StackFile)
	if stack.IssuerURL == "" || keyPath == "" {
		return fmt.Errorf("stack file %s has no local issuer (issuer_url and issuer_key_file): tokens can only be minted for the local cloud", g.StackFile)
	}
	audience := o.audience
	if audience == "" {
		audience = stack.JWTAudience
	}
	if audience == "" {
		return usageErrorf("stack file %s has no jwt_audience: pass --audience", g.StackFile)
	}

	// LoadKey, not LoadOrCreateKey: a key made here would be one the local
	// cloud does not publish, and every token signed with it would be refused.
	key, err := issuer.LoadKey(keyPath)
	if err != nil {
		return fmt.Errorf("load the local issuer key (has the local cloud run?): %w", err)
	}
	iss, err := issuer.New(stack.IssuerURL, key)
	if err != nil {
		return err
	}
	issued := g.Now()
	token, err := iss.Sign(issuer.Claims{
		Subject:  o.sub,
		Audience: audience,
		TokenUse: "id",
		Email:    o.email,
		Groups:   []string{o.role},
		IssuedAt: issued,
		Extra:    map[string]any{"cognito:username": o.sub},
	}, o.ttl)
	if err != nil {
		return fmt.Errorf("sign token: %w", err)
	}

	if g.JSON {
		return g.PrintJSON(tokenOutput{
			Token:     token,
			TokenType: "Bearer",
			Subject:   o.sub,
			Role:      o.role,
			Email:     o.email,
			Audience:  audience,
			Issuer:    iss.URL,
			ExpiresAt: issued.Truncate(time.Second).Add(o.ttl).UTC(),
		})
	}
	if _, err := fmt.Fprintln(g.Stdout, token); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
