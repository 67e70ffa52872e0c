package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/aws/aws-lambda-go/events"
)

// Role is a group of the caller's token (the cognito:groups claim).
type Role string

// The roles the API knows; other groups are ignored.
const (
	RoleStudent  Role = "student"
	RoleTeacher  Role = "teacher"
	RoleOperator Role = "operator"
)

// The claims the API reads. They are verified by the API Gateway JWT
// authorizer before the function is invoked.
const (
	claimSubject = "sub"
	claimGroups  = "cognito:groups"
	claimEmail   = "email"
)

// maxSubjectLength bounds the user id taken from the token: it becomes part
// of storage keys, and no identity provider issues longer ones (Cognito's are
// UUIDs).
const maxSubjectLength = 256

// identity is the verified caller. It is built from the authorizer's claims
// only, never from the body or other headers.
type identity struct {
	subject string // the user id
	email   string // the token's e-mail claim; may be empty; never logged
	roles   []Role
}

func (id identity) has(r Role) bool { return slices.Contains(id.roles, r) }

var errUnauthorized = &httpError{status: http.StatusUnauthorized, code: CodeUnauthorized, message: "a valid bearer token is required"}

// authenticate reads the caller from requestContext.authorizer.jwt.claims.
// Missing claims (no authorizer ran, or a token without sub) are 401: the
// function must not trust a request the authorizer did not vouch for.
func authenticate(ev *events.APIGatewayV2HTTPRequest) (identity, error) {
	a := ev.RequestContext.Authorizer
	if a == nil || a.JWT == nil {
		return identity{}, errUnauthorized
	}
	claims := a.JWT.Claims
	sub := claims[claimSubject]
	if sub == "" || len(sub) > maxSubjectLength || strings.IndexFunc(sub, unicode.IsControl) >= 0 {
		return identity{}, errUnauthorized
	}
	return identity{subject: sub, email: claims[claimEmail], roles: parseGroups(claims[claimGroups])}, nil
}

// parseGroups reads cognito:groups in the forms it arrives in. API Gateway
// renders a list claim as "[student teacher]" (Go's fmt form); a JSON array
// (`["student","teacher"]`) and a plain "student" or "student,teacher" are
// accepted too. Unknown groups are dropped.
func parseGroups(raw string) []Role {
	raw = strings.TrimSpace(raw)
	var names []string
	if err := json.Unmarshal([]byte(raw), &names); err != nil {
		names = strings.FieldsFunc(strings.Trim(raw, "[]"), func(r rune) bool {
			return r == ',' || unicode.IsSpace(r)
		})
	}
	var roles []Role
	for _, n := range names {
		switch r := Role(strings.Trim(n, `"' `)); r {
		case RoleStudent, RoleTeacher, RoleOperator:
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	return roles
}
