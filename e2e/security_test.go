package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/securitytest"
	"github.com/clubdev/club/localcloud/issuer"
	"github.com/clubdev/club/localcloud/template"
)

// signedToken signs claims for the stack's issuer with any method and key,
// under the issuer's kid: what an attacker who knows everything public can
// produce. claims are added to a set the stack would accept.
func signedToken(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	require.NotNil(t, stack.issuer, "forging a token under the issuer's kid needs the local issuer")
	now := time.Now()
	all := jwt.MapClaims{
		"iss": stack.file.IssuerURL, "sub": id("forger"), "aud": stack.file.JWTAudience,
		"cognito:groups": []string{"teacher", "student"}, "token_use": "id",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range claims {
		all[k] = v
	}
	tok := jwt.NewWithClaims(method, all)
	tok.Header["kid"] = stack.issuer.KeyID
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

func otherRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, issuer.KeyBits)
	require.NoError(t, err)
	return k
}

// The template's routes that the matrix below must cover, as "METHOD /path".
func templateRoutes(t *testing.T) []string {
	t.Helper()
	st, err := template.Load(filepath.Join(moduleRoot(), "infra", "template.yaml"), template.Options{})
	require.NoError(t, err)
	var out []string
	for _, fn := range st.Functions {
		for _, e := range fn.HTTPAPIEvents {
			out = append(out, e.Method+" "+e.Path)
		}
	}
	return out
}

// TestAuthorizationMatrixThroughTheGateway sends every route of the API as
// every kind of caller through the stack's real HTTP API: the JWT
// authorizer first, then the function's role and ownership rules. Students
// see only their own enrollments and purchases, teachers only their own
// classes' rosters and stats; what a caller may not see answers 404, exactly
// like what does not exist. Refused requests change nothing. Every route of
// infra/template.yaml must have a row.
func TestAuthorizationMatrixThroughTheGateway(t *testing.T) {
	forger := otherRSAKey(t)
	type caller struct {
		name  string
		token func(t *testing.T, owner, student user) string
	}
	callers := []caller{
		{"teacher of the class", func(_ *testing.T, owner, _ user) string { return owner.token }},
		{"another teacher", func(t *testing.T, _, _ user) string { return newUser(t, "teacher").token }},
		{"the enrolled student", func(_ *testing.T, _, student user) string { return student.token }},
		{"another student", func(t *testing.T, _, _ user) string { return newUser(t, "student").token }},
		{"operator", func(t *testing.T, _, _ user) string { return newUser(t, "operator").token }},
		{"signed in, no role", func(t *testing.T, _, _ user) string { return newUser(t, "").token }},
		{"no token", func(*testing.T, user, user) string { return "" }},
		{"forged token", func(t *testing.T, _, _ user) string { return signedToken(t, jwt.SigningMethodRS256, forger, nil) }},
	}
	// want holds one status per caller, in the order above. Gateway refusals
	// are 401 without an API error code.
	type row struct {
		method, path string // {class}, {enrollment}, {intensive}, {purchase}, {operation} are replaced
		body         any
		want         []int
	}
	rows := []row{
		{"GET", "/healthz", nil, []int{200, 200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/classes", map[string]any{"title": "Security", "capacity": 3, "starts_at": "2030-01-01T10:00:00Z"}, []int{201, 201, 403, 403, 403, 403, 401, 401}},
		{"GET", "/classes/{class}", nil, []int{200, 200, 200, 200, 200, 200, 401, 401}},
		{"POST", "/classes/{class}/enrollments", nil, []int{403, 403, 409, 201, 403, 403, 401, 401}},
		{"GET", "/classes/{class}/roster", nil, []int{200, 404, 403, 403, 403, 403, 401, 401}},
		{"GET", "/classes/{class}/stats", nil, []int{200, 404, 403, 403, 403, 403, 401, 401}},
		{"GET", "/enrollments/{enrollment}", nil, []int{200, 404, 200, 404, 404, 404, 401, 401}},
		{"PUT", "/me/profile", map[string]any{"email": "me@example.com", "display_name": "Me"}, []int{200, 200, 200, 200, 200, 200, 401, 401}},
		// The catch-all route answers unknown paths; it is authorized too.
		{"GET", "/admin", nil, []int{404, 404, 404, 404, 404, 404, 401, 401}},
		{"DELETE", "/enrollments/{enrollment}", nil, []int{403, 403, 200, 404, 403, 403, 401, 401}},
		{"POST", "/intensives", map[string]any{"title": "Security", "capacity": 3, "price": map[string]any{"amount_cents": 100, "currency": "EUR"}}, []int{201, 201, 403, 403, 403, 403, 401, 401}},
		{"GET", "/intensives/{intensive}", nil, []int{200, 200, 200, 200, 200, 200, 401, 401}},
		// The enrolled student already holds a purchase; another key is another purchase.
		{"POST", "/intensives/{intensive}/purchases", nil, []int{403, 403, 202, 202, 403, 403, 401, 401}},
		{"GET", "/purchases/{purchase}", nil, []int{404, 404, 200, 404, 404, 404, 401, 401}},
		// Only the class's teacher exports its roster; only the one who asked sees the operation.
		{"POST", "/classes/{class}/exports", nil, []int{202, 404, 403, 403, 403, 403, 401, 401}},
		{"GET", "/operations/{operation}", nil, []int{200, 404, 404, 404, 404, 404, 401, 401}},
		// Everyone signed in lists their own operations; others' never show.
		{"GET", "/operations", nil, []int{200, 200, 200, 200, 200, 200, 401, 401}},
		// The provider's route has no authorizer: the signature decides, and
		// no token, good or forged, stands in for it.
		{"POST", "/webhooks/payments", map[string]any{"event_id": "evt-1", "type": "payment.succeeded", "payment_id": "pay-1", "reference": "{purchase}"}, []int{401, 401, 401, 401, 401, 401, 401, 401}},
	}
	covered := map[string]bool{"ANY $default": true} // the /admin row
	for _, r := range rows {
		covered[r.method+" "+strings.NewReplacer("{class}", "{class_id}", "{enrollment}", "{enrollment_id}",
			"{intensive}", "{intensive_id}", "{purchase}", "{purchase_id}", "{operation}", "{operation_id}").Replace(r.path)] = true
	}
	for _, route := range templateRoutes(t) {
		require.True(t, covered[route], "route %s of infra/template.yaml has no row in the authorization matrix", route)
	}

	codes := map[int]string{403: "forbidden", 404: "not_found", 409: "already_enrolled"}
	for _, rw := range rows {
		t.Run(rw.method+" "+rw.path, func(t *testing.T) {
			classID, owner := newClass(t, 10)
			student := newUser(t, "student")
			enrolled := enroll(t, student, classID, id("key"))
			require.Equal(t, http.StatusCreated, enrolled.status, string(enrolled.raw))
			enrollmentID := enrolled.str("enrollment_id")
			var intensiveID, purchaseID string
			if strings.Contains(rw.path, "/intensives/") || strings.Contains(rw.path, "/purchases/") || strings.Contains(rw.path, "/webhooks/") {
				in := call(t, owner, http.MethodPost, "/intensives", map[string]any{
					"title": "Security", "capacity": 10, "price": map[string]any{"amount_cents": 100, "currency": "EUR"}, "hold_seconds": 600,
				})
				require.Equal(t, http.StatusCreated, in.status, string(in.raw))
				intensiveID = in.str("intensive_id")
				bought := call(t, student, http.MethodPost, "/intensives/"+intensiveID+"/purchases", nil, "Idempotency-Key", id("key"))
				require.Equal(t, http.StatusAccepted, bought.status, string(bought.raw))
				purchaseID = bought.str("purchase_id")
			}
			var operationID string
			if strings.Contains(rw.path, "/operations/") {
				operationID = requestExport(t, owner, classID)
			}
			ids := strings.NewReplacer("{class}", classID, "{enrollment}", enrollmentID, "{intensive}", intensiveID,
				"{purchase}", purchaseID, "{operation}", operationID)
			path := ids.Replace(rw.path)
			body := rw.body
			if m, ok := body.(map[string]any); ok && m["reference"] == "{purchase}" {
				body = map[string]any{"event_id": m["event_id"], "type": m["type"], "payment_id": m["payment_id"], "reference": purchaseID}
			}

			// What the accepted cells change; the refused ones must change nothing.
			seats, status, seatsLeft := 1, "enrolled", 0
			if intensiveID != "" {
				_, _, seatsLeft = intensiveSeats(t, owner, intensiveID)
			}
			for i, c := range callers {
				u := user{token: c.token(t, owner, student)}
				r := call(t, u, rw.method, path, body, "Idempotency-Key", id("key"))
				want := rw.want[i]
				require.Equal(t, want, r.status, "%s as %s: %s", rw.method, c.name, r.raw)
				switch {
				case want == http.StatusCreated && rw.method == "POST" && strings.HasSuffix(rw.path, "/enrollments"):
					seats++
				case want == http.StatusOK && rw.method == "DELETE":
					seats, status = seats-1, "cancelled"
				case want == http.StatusAccepted && strings.HasSuffix(rw.path, "/purchases"):
					seatsLeft--
				}
				switch {
				case want == 401 && rw.path == "/webhooks/payments":
					require.Equal(t, "invalid_signature", r.errorCode(), "refused by the function: no signature")
				case want == 401:
					require.JSONEq(t, `{"message":"Unauthorized"}`, string(r.raw), "refused by the gateway, before the function")
				case want == 404 && rw.path == "/admin":
					require.Equal(t, "route_not_found", r.errorCode())
				case want == 404 && strings.HasPrefix(rw.path, "/operations/"):
					require.Equal(t, "operation_not_found", r.errorCode(), "as %s", c.name)
				case want >= 400:
					require.Equal(t, codes[want], r.errorCode(), "%s as %s", rw.method, c.name)
				}
				if want >= 400 && rw.method != "GET" {
					// A refusal wrote nothing: the seat and the enrollment are as they were.
					cls := call(t, owner, http.MethodGet, "/classes/"+classID, nil)
					require.EqualValues(t, seats, cls.body["seats_taken"], "%s as %s", rw.method, c.name)
					require.Equal(t, status, call(t, student, http.MethodGet, "/enrollments/"+enrollmentID, nil).str("status"))
					if intensiveID != "" {
						_, _, left := intensiveSeats(t, owner, intensiveID)
						require.Equal(t, seatsLeft, left, "%s as %s: no seat held or freed", rw.method, c.name)
					}
				}
			}
		})
	}
}

// TestGatewayRefusesBadTokens: the stack's HTTP API applies the JWT rules
// before any function runs — pinned RS256, issuer, audience, expiry and
// not-before — and a refused token writes nothing.
func TestGatewayRefusesBadTokens(t *testing.T) {
	require.NotNil(t, stack.issuer, "this stack has no local issuer")
	publicPEM := func() []byte {
		der, err := x509.MarshalPKIXPublicKey(stack.issuer.PublicKey())
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	sign := func(c issuer.Claims) string {
		c.Audience = cmp.Or(c.Audience, stack.file.JWTAudience)
		c.Groups = []string{"student"}
		tok, err := stack.issuer.Sign(c, time.Hour)
		require.NoError(t, err)
		return tok
	}
	tests := []struct {
		name  string
		token func(sub string) string
	}{
		{"alg none", func(sub string) string {
			return signedToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": sub})
		}},
		{"HS256 keyed with the public key", func(sub string) string {
			return signedToken(t, jwt.SigningMethodHS256, publicPEM(), jwt.MapClaims{"sub": sub})
		}},
		{"wrong audience", func(sub string) string { return sign(issuer.Claims{Subject: sub, Audience: "another-app"}) }},
		{"expired", func(sub string) string {
			return sign(issuer.Claims{Subject: sub, IssuedAt: time.Now().Add(-time.Hour - time.Minute)})
		}},
		{"not valid yet", func(sub string) string {
			return sign(issuer.Claims{Subject: sub, IssuedAt: time.Now().Add(time.Hour)})
		}},
	}
	body := map[string]any{"email": "attacker@example.com", "display_name": "A"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := id("attacker")
			r := call(t, user{token: tt.token(sub)}, http.MethodPut, "/me/profile", body)
			require.Equal(t, http.StatusUnauthorized, r.status, string(r.raw))
			require.Contains(t, r.header.Get("Www-Authenticate"), `error="invalid_token"`)
			require.Empty(t, itemsMentioning(t, sub), "nothing was written for the refused caller")
		})
	}
	// The same request with a good token does write: the check above can fail.
	sub := id("attacker")
	r := call(t, user{token: sign(issuer.Claims{Subject: sub})}, http.MethodPut, "/me/profile", body)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	require.NotEmpty(t, itemsMentioning(t, sub))
}

// TestInputLimitsThroughTheGateway: oversized or out-of-range input answers
// 4xx with a code (the gateway's own limits answer before the function),
// never 5xx, and writes nothing.
func TestInputLimitsThroughTheGateway(t *testing.T) {
	teacher := newUser(t, "teacher")
	student := newUser(t, "student")
	classID, _ := newClass(t, 5)
	validClass := func(changes map[string]any) map[string]any {
		b := map[string]any{"title": "Limits", "capacity": 3, "starts_at": "2030-01-01T10:00:00Z"}
		for k, v := range changes {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name    string
		who     user
		method  string
		path    string
		body    any
		headers []string
		status  int
		code    string // "" for a gateway answer
	}{
		{"header over 10240 bytes", teacher, "POST", "/classes", validClass(nil), []string{"X-Pad", strings.Repeat("p", 10<<10)}, 431, ""},
		{"body over 10 MB", teacher, "POST", "/classes", bytes.Repeat([]byte(" "), 10<<20+1), nil, 413, ""},
		{"body over 64 KiB", teacher, "POST", "/classes", validClass(map[string]any{"title": strings.Repeat("x", 64<<10)}), nil, 413, "payload_too_large"},
		{"title over 200 characters", teacher, "POST", "/classes", validClass(map[string]any{"title": strings.Repeat("я", 201)}), nil, 400, "validation_failed"},
		{"title with a control character", teacher, "POST", "/classes", validClass(map[string]any{"title": "Go\u001b[2J"}), nil, 400, "validation_failed"},
		{"capacity over 10000", teacher, "POST", "/classes", validClass(map[string]any{"capacity": 10001}), nil, 400, "validation_failed"},
		{"capacity beyond int64", teacher, "POST", "/classes", `{"title":"Limits","capacity":1e30,"starts_at":"2030-01-01T10:00:00Z"}`, nil, 400, "validation_failed"},
		{"starts_at in year 10000 in UTC", teacher, "POST", "/classes", validClass(map[string]any{"starts_at": "9999-12-31T23:59:59-23:59"}), nil, 400, "validation_failed"},
		{"display name over 100 characters", student, "PUT", "/me/profile", map[string]any{"email": "a@example.com", "display_name": strings.Repeat("n", 101)}, nil, 400, "validation_failed"},
		{"e-mail over 254 bytes", student, "PUT", "/me/profile", map[string]any{"email": strings.Repeat("a", 250) + "@example.com", "display_name": "A"}, nil, 400, "validation_failed"},
		{"idempotency key over 128 characters", student, "POST", "/classes/" + classID + "/enrollments", nil, []string{"Idempotency-Key", strings.Repeat("k", 129)}, 400, "idempotency_key_required"},
		{"class id over 128 characters", student, "POST", "/classes/" + strings.Repeat("c", 129) + "/enrollments", nil, []string{"Idempotency-Key", id("key")}, 404, "class_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.who, tt.method, tt.path, tt.body, tt.headers...)
			if tt.code == "" && stack.file.IssuerKeyFile == "" {
				// API Gateway on AWS documents its quotas, not its answer.
				require.True(t, r.status >= 400 && r.status < 500, "%d: %s", r.status, r.raw)
				return
			}
			require.Equal(t, tt.status, r.status, string(r.raw))
			if tt.code != "" {
				require.Equal(t, tt.code, r.errorCode(), string(r.raw))
			}
		})
	}
	require.Empty(t, itemsMentioning(t, teacher.sub), "no class, profile or record of the teacher")
	require.Empty(t, itemsMentioning(t, student.sub), "no seat, profile or record of the student")
	c := call(t, teacher, http.MethodGet, "/classes/"+classID, nil)
	require.EqualValues(t, 0, c.body["seats_taken"])
}

// TestOutboxRowsCarryNoPersonalData: the events the API writes name people
// by id only — no e-mail address, no name — whatever the token and the
// profile hold.
func TestOutboxRowsCarryNoPersonalData(t *testing.T) {
	classID, _ := newClass(t, 5)
	student := newUser(t, "student")
	r := call(t, student, http.MethodPut, "/me/profile", map[string]any{"email": student.email, "display_name": "Ada Lovelace"})
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	created := enroll(t, student, classID, id("key"))
	require.Equal(t, http.StatusCreated, created.status, string(created.raw))
	cancelled := call(t, student, http.MethodDelete, "/enrollments/"+created.str("enrollment_id"), nil)
	require.Equal(t, http.StatusOK, cancelled.status)

	rows := scan(t, stack.file.Tables["OutboxTable"])
	var ours int
	for _, item := range rows {
		payload, _ := item["payload"].(*ddbtypes.AttributeValueMemberS)
		require.NotNil(t, payload, "every outbox row has a payload")
		found, err := securitytest.PersonalData([]byte(payload.Value))
		require.NoError(t, err)
		require.Empty(t, found, "outbox row %s", payload.Value)
		for name, v := range item {
			if s, ok := v.(*ddbtypes.AttributeValueMemberS); ok {
				require.False(t, obs.ContainsEmail(s.Value), "attribute %s: %s", name, s.Value)
				require.NotContains(t, s.Value, "Lovelace", "attribute %s", name)
			}
		}
		if strings.Contains(payload.Value, created.str("enrollment_id")) {
			ours++
			require.Contains(t, payload.Value, student.sub, "the student is named by id")
		}
	}
	require.Equal(t, 2, ours, "enrollment.created and enrollment.cancelled were checked")
}

// scan reads a whole table.
func scan(t *testing.T, table string) []map[string]ddbtypes.AttributeValue {
	t.Helper()
	db := dynamodb.NewFromConfig(stack.aws)
	var out []map[string]ddbtypes.AttributeValue
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(t, err)
		out = append(out, page.Items...)
	}
	return out
}

// itemsMentioning lists the keys of club-table items with a string attribute
// that contains s (a user id: its profile, seats, idempotency records,
// classes).
func itemsMentioning(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, item := range scan(t, stack.file.Tables["ClubTable"]) {
		for _, v := range item {
			if str, ok := v.(*ddbtypes.AttributeValueMemberS); ok && strings.Contains(str.Value, s) {
				pk, _ := item["pk"].(*ddbtypes.AttributeValueMemberS)
				sk, _ := item["sk"].(*ddbtypes.AttributeValueMemberS)
				out = append(out, fmt.Sprintf("%s/%s", pk.Value, sk.Value))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
