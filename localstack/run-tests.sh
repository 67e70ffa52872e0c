#!/usr/bin/env bash
# Runs the end-to-end suite against LocalStack: start it, deploy the SAM
# template, export the stack's outputs as a stack file, run the suite.
# Needs: Docker with compose, LOCALSTACK_AUTH_TOKEN, the SAM CLI.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "test-localstack: $*" >&2; exit 1; }
command -v docker >/dev/null || die "Docker is required"
docker info >/dev/null 2>&1 || die "the Docker engine is not running"
[ -n "${LOCALSTACK_AUTH_TOKEN:-}" ] || die "LOCALSTACK_AUTH_TOKEN is not set (current LocalStack images need it)"
command -v sam >/dev/null || die "the SAM CLI is required (sam build / sam deploy)"
command -v aws >/dev/null || die "the AWS CLI is required (aws ssm put-parameter)"

export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
stack=club-localstack
cleanup() { docker compose -f localstack/docker-compose.yml down -v >/dev/null 2>&1 || true; }
[ "${KEEP_LOCALSTACK:-0}" = 1 ] || trap cleanup EXIT

compose() { docker compose -f localstack/docker-compose.yml "$@"; }
# The webhook secret is generated per run and put into SSM as a SecureString
# before the API starts: secrets never live in the repository, nor in a
# function's environment. The template names the parameter; the payment
# sandbox signs with the same secret (a file only the run can read).
mkdir -p .club/localstack
secret_parameter=/club/payment-webhook-secret
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
( umask 077; printf '%s' "$secret" > .club/localstack/webhook-secret )

compose up -d --wait localstack sandbox-mail
aws --endpoint-url "$AWS_ENDPOINT_URL" ssm put-parameter --name "$secret_parameter" --type SecureString --value "$secret" --overwrite >/dev/null
CGO_ENABLED=0 sam build -t infra/template.yaml
# The functions reach the sandboxes by their service names on the compose
# network; EnableTestUsers adds the app client the suite signs its users in
# with (AdminInitiateAuth), since LocalStack has no local issuer.
sam deploy --stack-name "$stack" --resolve-s3 --no-confirm-changeset --no-fail-on-empty-changeset \
  --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --region "$AWS_REGION" \
  --parameter-overrides "PaymentWebhookSecretParameter=$secret_parameter" EnableTestUsers=true \
    MailApiUrl=http://sandbox-mail:4580 PaymentApiUrl=http://sandbox-payment:4581

# The payment sandbox posts webhooks to the API through LocalStack's
# path-style execute-api URL, which resolves inside the compose network.
api_id=$(aws cloudformation describe-stack-resource --stack-name "$stack" --logical-resource-id ClubApi \
  --query StackResourceDetail.PhysicalResourceId --output text)
CLUB_WEBHOOK_URL="http://localstack:4566/_aws/execute-api/$api_id/webhooks/payments" compose up -d --wait sandbox-payment

go run ./cmd/clubctl stack-file --stack-name "$stack" --out .club/localstack-stack.json \
  --mail-url http://127.0.0.1:4580 --payment-url http://127.0.0.1:4581
CLUB_STACK_FILE="$PWD/.club/localstack-stack.json" go test -count=1 -timeout 30m ./e2e/...
