package snsfix

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

const snsXMLNS = "http://sns.amazonaws.com/doc/2010-03-31/"

// Fixes corrects the SNS Query-protocol calls of the engine it wraps (see
// the package doc). Safe for concurrent use.
type Fixes struct {
	next http.Handler
	// losesArrays and losesBinary: the engine cannot deliver those
	// attribute types as SNS does (kumo), so publishing them is refused.
	losesArrays, losesBinary, losesNumbers bool
	// evaluates are the filter policy features the engine evaluates as SNS.
	evaluates map[string]bool

	refused    atomic.Int64
	idempotent atomic.Int64
	translated atomic.Int64
}

// Option configures Fixes.
type Option func(*Fixes)

// WithKumoDelivery says the engine is kumo: it filters String.Array
// attributes as one string, delivers Binary attributes empty in the
// envelope and cannot read a Publish with a Number attribute ("Failed to
// parse request body"), so a Publish that carries them is refused, named.
func WithKumoDelivery() Option {
	return func(f *Fixes) { f.losesArrays, f.losesBinary, f.losesNumbers = true, true, true }
}

// WithMotoDelivery says the engine is moto 5.2: with raw message delivery it
// drops a message that carries a Binary attribute (nothing reaches the
// queue), so a Publish that carries one is refused.
// It evaluates numeric, suffix, equals-ignore-case and anything-but
// matching and FilterPolicyScope MessageBody as SNS does: those policies
// pass.
func WithMotoDelivery() Option {
	return func(f *Fixes) {
		f.losesBinary = true
		f.evaluates = map[string]bool{FeatureNumeric: true, FeatureSuffix: true, FeatureIgnoreCase: true,
			FeatureAnythingButMore: true, FeatureMessageBody: true}
	}
}

// New returns Fixes in front of next.
func New(next http.Handler, opts ...Option) *Fixes {
	f := &Fixes{next: next}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Stats says what Fixes did.
type Stats struct {
	Refused    int64 `json:"refused"`    // requests refused for a feature the local cloud cannot carry out
	Idempotent int64 `json:"idempotent"` // Subscribe calls answered with the existing subscription
	Translated int64 `json:"translated"` // JSON error answers rewritten as the Query protocol's XML
}

// Stats returns the counters.
func (f *Fixes) Stats() Stats {
	return Stats{Refused: f.refused.Load(), Idempotent: f.idempotent.Load(), Translated: f.translated.Load()}
}

func (f *Fixes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "cannot read the request")
		return
	}
	form, _ := url.ParseQuery(string(body))
	for k, v := range r.URL.Query() {
		if _, ok := form[k]; !ok {
			form[k] = v
		}
	}
	action := form.Get("Action")
	if !snsActions[action] {
		writeError(w, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("The action %s is not valid for this web service.", action))
		return
	}
	switch action {
	case "Subscribe":
		attrs := entries(form, "Attributes")
		if perr := checkPolicy(attrs["FilterPolicy"], attrs["FilterPolicyScope"], f.evaluates); perr != nil {
			f.refuse(w, perr)
			return
		}
		if f.existingSubscription(w, r, form, attrs) {
			return
		}
	case "SetSubscriptionAttributes":
		var perr *policyError
		switch form.Get("AttributeName") {
		case "FilterPolicy":
			perr = checkPolicy(form.Get("AttributeValue"), "", f.evaluates)
		case "FilterPolicyScope":
			perr = checkPolicy("", form.Get("AttributeValue"), f.evaluates)
		}
		if perr != nil {
			f.refuse(w, perr)
			return
		}
	case "Publish", "PublishBatch":
		if feature := f.undeliverable(form); feature != "" {
			f.refused.Add(1)
			writeError(w, http.StatusBadRequest, "InvalidParameter",
				fmt.Sprintf("Invalid parameter: MessageAttributes: %s are not supported by the local cloud on this engine (it would deliver them otherwise than SNS)", feature))
			return
		}
	}
	c := f.call(r, body)
	if c.Code >= 400 && strings.Contains(c.Header().Get("Content-Type"), "json") {
		f.translated.Add(1)
		writeError(w, c.Code, jsonErrorCode(c.Body.Bytes()), jsonErrorMessage(c.Body.Bytes()))
		return
	}
	for k, v := range c.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(c.Code)
	_, _ = w.Write(c.Body.Bytes())
}

func (f *Fixes) refuse(w http.ResponseWriter, perr *policyError) {
	if perr.feature != "" {
		f.refused.Add(1)
	}
	writeError(w, http.StatusBadRequest, "InvalidParameter", perr.Error())
}

func (f *Fixes) call(r *http.Request, body []byte) *httptest.ResponseRecorder {
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r2)
	return rec
}

// callAction makes a Query call of the local cloud's own to the engine, with
// the caller's credentials.
func (f *Fixes) callAction(r *http.Request, params url.Values) *httptest.ResponseRecorder {
	body := []byte(params.Encode())
	r2 := r.Clone(r.Context())
	r2.Header = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": r.Header.Values("Authorization")}
	r2.URL = &url.URL{Path: "/"}
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r2)
	return rec
}

// snsActions are the actions of the SNS API
// (https://docs.aws.amazon.com/sns/latest/api/API_Operations.html).
var snsActions = map[string]bool{}

func init() {
	for _, a := range strings.Fields(`AddPermission CheckIfPhoneNumberIsOptedOut ConfirmSubscription
		CreatePlatformApplication CreatePlatformEndpoint CreateSMSSandboxPhoneNumber CreateTopic DeleteEndpoint
		DeletePlatformApplication DeleteSMSSandboxPhoneNumber DeleteTopic GetDataProtectionPolicy
		GetEndpointAttributes GetPlatformApplicationAttributes GetSMSAttributes GetSMSSandboxAccountStatus
		GetSubscriptionAttributes GetTopicAttributes ListEndpointsByPlatformApplication ListOriginationNumbers
		ListPhoneNumbersOptedOut ListPlatformApplications ListSMSSandboxPhoneNumbers ListSubscriptions
		ListSubscriptionsByTopic ListTagsForResource ListTopics OptInPhoneNumber Publish PublishBatch
		PutDataProtectionPolicy RemovePermission SetEndpointAttributes SetPlatformApplicationAttributes
		SetSMSAttributes SetSubscriptionAttributes SetTopicAttributes Subscribe TagResource Unsubscribe
		UntagResource VerifySMSSandboxPhoneNumber`) {
		snsActions[a] = true
	}
}

// entries reads a Query map parameter: prefix.entry.N.key / .value.
func entries(form url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for i := 1; ; i++ {
		k := form.Get(fmt.Sprintf("%s.entry.%d.key", prefix, i))
		if k == "" {
			return out
		}
		out[k] = form.Get(fmt.Sprintf("%s.entry.%d.value", prefix, i))
	}
}

// undeliverable names an attribute type of a Publish or PublishBatch the
// engine cannot deliver as SNS does.
func (f *Fixes) undeliverable(form url.Values) string {
	for k, v := range form {
		if !strings.HasSuffix(k, ".Value.DataType") || len(v) == 0 {
			continue
		}
		switch t := v[0]; {
		case f.losesArrays && t == "String.Array":
			return FeatureStringArray
		case f.losesBinary && strings.HasPrefix(t, "Binary"):
			return FeatureBinary
		case f.losesNumbers && strings.HasPrefix(t, "Number"):
			return FeatureNumber
		}
	}
	return ""
}

// existingSubscription answers a Subscribe to an endpoint the topic already
// has a subscription for, as SNS does: with that subscription's ARN when
// the attributes the request gives are the same, InvalidParameter when
// they differ. It reports whether it answered.
func (f *Fixes) existingSubscription(w http.ResponseWriter, r *http.Request, form url.Values, attrs map[string]string) bool {
	topic, protocol, endpoint := form.Get("TopicArn"), form.Get("Protocol"), form.Get("Endpoint")
	var existing string
	next := ""
	for {
		params := url.Values{"Action": {"ListSubscriptionsByTopic"}, "TopicArn": {topic}}
		if next != "" {
			params.Set("NextToken", next)
		}
		rec := f.callAction(r, params)
		if rec.Code != http.StatusOK {
			return false // the Subscribe meets the same error
		}
		var out struct {
			Subs []struct {
				SubscriptionArn, Protocol, Endpoint string
			} `xml:"ListSubscriptionsByTopicResult>Subscriptions>member"`
			NextToken string `xml:"ListSubscriptionsByTopicResult>NextToken"`
		}
		if xml.Unmarshal(rec.Body.Bytes(), &out) != nil {
			return false
		}
		for _, s := range out.Subs {
			if s.Protocol == protocol && s.Endpoint == endpoint {
				existing = s.SubscriptionArn
			}
		}
		if existing != "" || out.NextToken == "" {
			break
		}
		next = out.NextToken
	}
	if existing == "" {
		return false
	}
	rec := f.callAction(r, url.Values{"Action": {"GetSubscriptionAttributes"}, "SubscriptionArn": {existing}})
	var got struct {
		Entries []struct {
			Key   string `xml:"key"`
			Value string `xml:"value"`
		} `xml:"GetSubscriptionAttributesResult>Attributes>entry"`
	}
	if rec.Code != http.StatusOK || xml.Unmarshal(rec.Body.Bytes(), &got) != nil {
		return false
	}
	have := map[string]string{}
	for _, e := range got.Entries {
		have[e.Key] = e.Value
	}
	for k, v := range attrs {
		if !sameAttribute(k, v, have[k]) {
			writeError(w, http.StatusBadRequest, "InvalidParameter", "Invalid parameter: Attributes Reason: Subscription already exists with different attributes")
			return true
		}
	}
	f.idempotent.Add(1)
	w.Header().Set("Content-Type", "text/xml")
	_, _ = fmt.Fprintf(w, `<SubscribeResponse xmlns="%s"><SubscribeResult><SubscriptionArn>%s</SubscriptionArn></SubscribeResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></SubscribeResponse>`,
		snsXMLNS, xmlEscape(existing), uuid.NewString())
	return true
}

// sameAttribute compares a requested subscription attribute with the one
// kept: JSON documents by value, booleans by value, the rest as text.
func sameAttribute(name, want, have string) bool {
	if want == have {
		return true
	}
	switch name {
	case "FilterPolicy", "RedrivePolicy", "DeliveryPolicy":
		var a, b any
		return json.Unmarshal([]byte(want), &a) == nil && json.Unmarshal([]byte(have), &b) == nil && jsonEqual(a, b)
	case "RawMessageDelivery":
		a, err1 := strconv.ParseBool(want)
		b, err2 := strconv.ParseBool(have)
		if have == "" {
			b, err2 = false, nil
		}
		return err1 == nil && err2 == nil && a == b
	case "FilterPolicyScope":
		return (want == "MessageAttributes" && have == "") || (want == "" && have == "MessageAttributes")
	}
	return false
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func jsonErrorCode(body []byte) string {
	var e struct {
		Type string `json:"__type"`
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	code := e.Type
	if code == "" {
		code = e.Code
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	switch code {
	case "":
		return "InternalFailure"
	case "UnknownOperationException", "UnknownAction", "InvalidAction":
		return "InvalidAction"
	}
	return code
}

func jsonErrorMessage(body []byte) string {
	var e struct {
		Message  string `json:"message"`
		MessageU string `json:"Message"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Message == "" {
		e.Message = e.MessageU
	}
	return e.Message
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// writeError answers an error in the Query protocol's XML.
func writeError(w http.ResponseWriter, status int, code, message string) {
	fault := "Sender"
	if status >= 500 {
		fault = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
		snsXMLNS, fault, xmlEscape(code), xmlEscape(message), uuid.NewString())
}
