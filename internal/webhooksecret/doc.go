// Package webhooksecret is the adapter that gives the API its payment
// webhook handler over the provider's secret in SSM Parameter Store: [Read]
// reads the SecureString parameter, and [NewWebhooks] returns an
// api.PaymentWebhooks that verifies deliveries with the secret read at
// start, follows a rotation of the secret (after a signature mismatch, at
// most once per [RereadInterval]) and, while the secret cannot be read,
// answers an *api.UnavailableError naming the parameter (503
// webhook_secret_unavailable from /healthz and the webhook route) instead of
// stopping the API. functions/api wires it with the SSM client its main
// builds.
package webhooksecret
