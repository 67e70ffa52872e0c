package adversary

import (
	"bytes"
	"net/http"
	"strings"
)

// Handler wraps the endpoint: next is everything behind it (the front), and
// engine the engine's own handler, which the adversary reads through for
// itself (an item's earlier version, a table's key schema) and makes a
// message visible again through, so that its own calls are neither counted
// nor billed nor met by itself. With every rate 0 a call passes straight to
// next. The Lambda Runtime API and the local cloud's own /_club/ endpoints
// are never touched.
func (a *Adversary) Handler(next, engine http.Handler) http.Handler {
	a.engine = engine
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.On() || strings.HasPrefix(r.URL.Path, "/_runtime/") || strings.HasPrefix(r.URL.Path, "/_club/") {
			next.ServeHTTP(w, r)
			return
		}
		c, err := readCall(r)
		if err != nil {
			http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if refusal := a.refuse(c); refusal != nil {
			refusal.write(w)
			return
		}
		ans := a.carryOut(next, c)
		if lost := a.lose(c, ans); lost != nil {
			ans = lost
		}
		ans.write(w)
	})
}

// refuse answers a call with an error before it is carried out, or returns
// nil.
func (a *Adversary) refuse(c *call) *answer {
	if c.service == "dynamodb" {
		return a.refuseDynamoDB(c)
	}
	return nil
}

// carryOut has next carry the call out, through the behaviour that changes
// how.
func (a *Adversary) carryOut(next http.Handler, c *call) *answer {
	switch c.service + "." + c.operation {
	case "sqs.ReceiveMessage":
		if c.protocol == protoJSON {
			return a.receive(next, c)
		}
	case "sqs.DeleteMessage", "sqs.DeleteMessageBatch":
		if c.protocol == protoJSON {
			return a.delete(next, c)
		}
	case "sns.Publish", "sns.PublishBatch":
		return a.publish(next, c)
	case "dynamodb.GetItem":
		return a.getItem(next, c)
	case "dynamodb.Query", "dynamodb.Scan":
		return a.readMany(next, c)
	case "dynamodb.PutItem", "dynamodb.UpdateItem", "dynamodb.DeleteItem",
		"dynamodb.TransactWriteItems", "dynamodb.BatchWriteItem":
		return a.write(next, c)
	}
	return forward(next, c.r, c.body)
}

// lose replaces the answer of a call that was carried out with a 500, as a
// connection that broke after the work would: the SDK retries the call and
// the retry runs again (the endpoint replays no answer while the adversary
// is on). Only calls whose caller retries (an SDK or the CLI) lose answers,
// and only successful ones: a refusal is not work done.
func (a *Adversary) lose(c *call, ans *answer) *answer {
	if !c.sdk || !ans.ok() || !a.Decide(LostAnswer) {
		return nil
	}
	a.Count(LostAnswer)
	if idempotent(c) {
		a.idempotentRetries.Add(1)
	}
	code := "InternalFailure"
	if c.service == "dynamodb" {
		code = "InternalServerError"
	}
	return awsError(c, http.StatusInternalServerError, code,
		"the adversary lost this answer after the call was carried out (any.lost_answer, seed "+a.Stats().Seed+")")
}

// idempotent reports whether AWS carries a retry of the call out only once:
// TransactWriteItems with a ClientRequestToken (for 10 minutes) and
// StartExecution with a name (the same input returns the running
// execution).
func idempotent(c *call) bool {
	switch c.service + "." + c.operation {
	case "dynamodb.TransactWriteItems":
		return bytes.Contains(c.body, []byte(`"ClientRequestToken"`))
	case "states.StartExecution":
		return bytes.Contains(c.body, []byte(`"name"`))
	}
	return false
}
