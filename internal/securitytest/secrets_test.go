package securitytest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/securitytest"
	"github.com/clubdev/club/localcloud/template"
)

// The API gets the name of the webhook secret's SSM parameter, never the
// secret, and may read exactly that parameter.
func TestInfraTemplateKeepsSecretsOutOfTheEnvironment(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, nil)
	st = loadInfra(t, securitytest.SecretMarkers(st))
	require.Empty(t, problems(securitytest.Secrets(st)))

	fn, ok := st.Function("ApiFunction")
	require.True(t, ok)
	name := st.Parameters["PaymentWebhookSecretParameter"]
	require.Equal(t, "/club/payment-webhook-secret", name)
	require.Equal(t, name, fn.Environment["PAYMENT_WEBHOOK_SECRET_PARAMETER"])
	var policies []struct {
		Statement []struct {
			Action    []string
			Resource  string
			Condition map[string]map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(fn.Policies, &policies))
	arn := "arn:aws:ssm:" + st.Region + ":" + st.AccountID + ":parameter" + name
	var reads, decrypts int
	for _, p := range policies {
		for _, s := range p.Statement {
			switch {
			case len(s.Action) == 1 && s.Action[0] == "ssm:GetParameter":
				require.Equal(t, arn, s.Resource, "the one parameter")
				reads++
			case len(s.Action) == 1 && s.Action[0] == "kms:Decrypt":
				require.Equal(t, "ssm."+st.Region+".amazonaws.com", s.Condition["StringEquals"]["kms:ViaService"])
				require.Equal(t, arn, s.Condition["StringEquals"]["kms:EncryptionContext:PARAMETER_ARN"], "only for that parameter")
				decrypts++
			}
			for _, a := range s.Action {
				require.False(t, strings.HasPrefix(a, "ssm:") && a != "ssm:GetParameter", "no other SSM action: %s", a)
			}
		}
	}
	require.Equal(t, 1, reads)
	require.Equal(t, 1, decrypts)

	// Another parameter name moves the grant with it.
	other := loadInfra(t, map[string]string{"PaymentWebhookSecretParameter": "/prod/club/webhook"})
	fn, _ = other.Function("ApiFunction")
	require.Equal(t, "/prod/club/webhook", fn.Environment["PAYMENT_WEBHOOK_SECRET_PARAMETER"])
	require.Contains(t, string(fn.Policies), `"arn:aws:ssm:`+st.Region+`:`+st.AccountID+`:parameter/prod/club/webhook"`)
}

func TestSecretsFindsSecretsInTheEnvironment(t *testing.T) {
	t.Parallel()
	src := `
Transform: AWS::Serverless-2016-10-31
Parameters:
  WebhookSecret: {Type: String, NoEcho: true, Default: ""}
  DbPassword: {Type: String, NoEcho: true, Default: ""}
  SecretName: {Type: String, Default: /club/payment-webhook-secret}
Resources:
  Bad:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Environment:
        Variables:
          PAYMENT_WEBHOOK_SECRET: !Ref WebhookSecret
          DSN: !Sub "postgres://club:${DbPassword}@db.internal/club"
          MAIL_API_KEY: "key-1"
          SESSION_TOKEN: ""
          STRIPE: whsec_5WbX7lHXcQ
          AWS_KEY: AKIAIOSFODNN7EXAMPLE
          SIGNING_KEY: "-----BEGIN RSA PRIVATE KEY-----"
          FROM_SSM: "{{resolve:secretsmanager:club/webhook}}"
          HMAC: 8f14e45fceea167a5a36dedd4bea2543c9a1b0e3
  Good:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Environment:
        Variables:
          PAYMENT_WEBHOOK_SECRET_PARAMETER: !Ref SecretName
          DB_PASSWORD_SECRET_ARN: arn:aws:secretsmanager:us-east-1:000000000000:secret:club-db-AbCdEf
          QUEUE_URL: http://127.0.0.1:4566/000000000000/club-notifications-dead-letter-queue
          STATE_MACHINE_ARN: arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase-with-a-long-name
          INBOX_RETENTION: 7d
          TABLE: club_analytics_dead_letter_queue_counters_v2
`
	parse := func(params map[string]string) *template.Stack {
		st, err := template.Parse([]byte(src), template.Options{Dir: t.TempDir(), Parameters: params})
		require.NoError(t, err)
		return st
	}
	st := parse(nil)
	got := problems(securitytest.Secrets(parse(securitytest.SecretMarkers(st))))
	require.Equal(t, []string{
		"Bad: environment variable AWS_KEY holds an AWS access key id",
		"Bad: environment variable DSN carries the NoEcho parameter DbPassword: pass the name of an SSM SecureString parameter and read it at start",
		"Bad: environment variable FROM_SSM holds a dynamic reference, which CloudFormation resolves into the plain value",
		"Bad: environment variable HMAC holds a random-looking value (a secret key?)",
		"Bad: environment variable MAIL_API_KEY holds a secret, not a reference to one (an SSM parameter name or an ARN)",
		"Bad: environment variable PAYMENT_WEBHOOK_SECRET carries the NoEcho parameter WebhookSecret: pass the name of an SSM SecureString parameter and read it at start",
		"Bad: environment variable SESSION_TOKEN holds a secret, not a reference to one (an SSM parameter name or an ARN)",
		"Bad: environment variable SIGNING_KEY holds a private key",
		"Bad: environment variable STRIPE holds a provider's secret key",
	}, got)

	// Without the markers an empty NoEcho default is invisible by value;
	// the variable's name still gives PAYMENT_WEBHOOK_SECRET away.
	got = problems(securitytest.Secrets(st))
	require.Contains(t, got, "Bad: environment variable PAYMENT_WEBHOOK_SECRET holds a secret, not a reference to one (an SSM parameter name or an ARN)")
	require.NotContains(t, strings.Join(got, "\n"), "DSN")
}
