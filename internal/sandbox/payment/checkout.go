package payment

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
)

// checkoutPage lets a person play the student at the provider's checkout:
// the buttons call the control endpoints that settle the payment.
var checkoutPage = template.Must(template.New("checkout").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sandbox checkout</title></head>
<body>
<h1>Sandbox checkout</h1>
<p>Payment <code>{{.PaymentID}}</code> for <code>{{.Reference}}</code>:
{{.AmountCents}} cents {{.Currency}}. Status: <strong>{{.Status}}</strong>.</p>
{{if eq .Status "pending"}}
<form method="post" action="/_sandbox/payments/{{.PaymentID}}/succeed"><button>Pay</button></form>
<form method="post" action="/_sandbox/payments/{{.PaymentID}}/fail"><button>Decline</button></form>
{{end}}
</body>
</html>
`))

func (s *Server) handleCheckout(w http.ResponseWriter, r *http.Request) error {
	p, ok := s.Payment(r.PathValue("payment_id"))
	if !ok {
		return paymentNotFound(r.PathValue("payment_id"))
	}
	var page bytes.Buffer
	if err := checkoutPage.Execute(&page, p); err != nil {
		return fmt.Errorf("render checkout page: %w", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page.Bytes()) // a failed write means the client has gone
	return nil
}
