package sqsquery

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
)

// queryError is an SQS error as the Query protocol reports it.
type queryError struct {
	status  int
	code    string
	message string
	// fault is "Sender" or "Receiver"; empty means "derive from status".
	fault string
}

func (e *queryError) Error() string { return e.code + ": " + e.message }

func (e *queryError) faultType() string {
	switch {
	case e.fault != "":
		return e.fault
	case e.status >= 500:
		return "Receiver"
	default:
		return "Sender"
	}
}

// queryCode is the Query-protocol identity of an SQS error.
type queryCode struct {
	code   string
	status int
}

// queryCodes maps the JSON error names of SQS (the model's shape names) to
// the code and HTTP status a Query client receives, from the awsQueryError
// traits of the SQS service model. Errors without the trait
// (InvalidAttributeName, InvalidAttributeValue, InvalidMessageContents,
// InvalidIdFormat, and the common errors such as InvalidParameterValue) have
// the same code in both protocols.
var queryCodes = map[string]queryCode{
	"BatchEntryIdsNotDistinct":     {"AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400},
	"BatchRequestTooLong":          {"AWS.SimpleQueueService.BatchRequestTooLong", 400},
	"EmptyBatchRequest":            {"AWS.SimpleQueueService.EmptyBatchRequest", 400},
	"InvalidAddress":               {"InvalidAddress", 404},
	"InvalidBatchEntryId":          {"AWS.SimpleQueueService.InvalidBatchEntryId", 400},
	"InvalidSecurity":              {"InvalidSecurity", 403},
	"KmsAccessDenied":              {"KMS.AccessDeniedException", 400},
	"KmsDisabled":                  {"KMS.DisabledException", 400},
	"KmsInvalidKeyUsage":           {"KMS.InvalidKeyUsageException", 400},
	"KmsInvalidState":              {"KMS.InvalidStateException", 400},
	"KmsNotFound":                  {"KMS.NotFoundException", 400},
	"KmsOptInRequired":             {"KMS.OptInRequired", 403},
	"KmsThrottled":                 {"KMS.ThrottlingException", 400},
	"MessageNotInflight":           {"AWS.SimpleQueueService.MessageNotInflight", 400},
	"OverLimit":                    {"OverLimit", 403},
	"PurgeQueueInProgress":         {"AWS.SimpleQueueService.PurgeQueueInProgress", 403},
	"QueueDeletedRecently":         {"AWS.SimpleQueueService.QueueDeletedRecently", 400},
	"QueueDoesNotExist":            {"AWS.SimpleQueueService.NonExistentQueue", 400},
	"QueueNameExists":              {"QueueAlreadyExists", 400},
	"ReceiptHandleIsInvalid":       {"ReceiptHandleIsInvalid", 404},
	"RequestThrottled":             {"RequestThrottled", 403},
	"ResourceNotFoundException":    {"ResourceNotFoundException", 404},
	"TooManyEntriesInBatchRequest": {"AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400},
	"UnsupportedOperation":         {"AWS.SimpleQueueService.UnsupportedOperation", 400},
}

// statusByQueryCode gives the status of a code that is already in its Query
// form, as some emulators (kumo among them) write it into the JSON __type.
var statusByQueryCode = func() map[string]int {
	m := make(map[string]int, len(queryCodes))
	for _, c := range queryCodes {
		m[c.code] = c.status
	}
	return m
}()

// errorFromJSON reads a JSON-protocol error answer and gives its Query form.
func errorFromJSON(status int, header http.Header, body []byte) *queryError {
	var payload struct {
		Type         string `json:"__type"`
		Message      string `json:"message"`
		MessageUpper string `json:"Message"`
	}
	_ = json.Unmarshal(body, &payload) // an unreadable body is handled below
	e := &queryError{status: status, code: jsonErrorName(payload.Type), message: payload.Message}
	if e.message == "" {
		e.message = payload.MessageUpper
	}
	if e.code == "" {
		// Not an AWS error body (a proxy failing to reach the emulator, say).
		e.code = "InternalFailure"
		if status < 500 {
			e.code = "InvalidRequest"
		}
		if e.message == "" {
			e.message = fmt.Sprintf("the SQS backend answered HTTP %d without an AWS error", status)
		}
	}

	// AWS's JSON endpoints of awsQueryCompatible services name the Query code
	// and fault in this header; it wins over any table.
	if h := header.Get("X-Amzn-Query-Error"); h != "" {
		code, fault, _ := strings.Cut(h, ";")
		e.code, e.fault = code, fault
	} else if c, ok := queryCodes[e.code]; ok {
		e.code = c.code
	}
	if s, ok := statusByQueryCode[e.code]; ok {
		e.status = s
	}
	return e
}

// jsonErrorName reduces a JSON __type to the error name:
// "com.amazonaws.sqs#QueueDoesNotExist:http://internal.amazon.com/..." is
// QueueDoesNotExist.
func jsonErrorName(t string) string {
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	return strings.TrimSpace(t)
}

// renderError writes the Query-protocol error document.
func renderError(e *queryError, requestID string) []byte {
	type errorBody struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
		Detail  string `xml:"Detail"`
	}
	type errorResponse struct {
		XMLName   xml.Name  `xml:"ErrorResponse"`
		Xmlns     string    `xml:"xmlns,attr"`
		Error     errorBody `xml:"Error"`
		RequestID string    `xml:"RequestId"`
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	// Marshalling these fixed string fields cannot fail.
	_ = xml.NewEncoder(&buf).Encode(errorResponse{
		Xmlns:     xmlNamespace,
		Error:     errorBody{Type: e.faultType(), Code: e.code, Message: e.message},
		RequestID: requestID,
	})
	return buf.Bytes()
}

// QueryCode gives the Query-protocol code and fault of a JSON-protocol SQS
// error name, as AWS's JSON endpoint names them in the x-amzn-query-error
// header ("AWS.SimpleQueueService.NonExistentQueue;Sender"). A name that
// is already a Query code, or has no trait, keeps its name.
func QueryCode(jsonName string) (code, fault string) {
	name := jsonErrorName(jsonName)
	c, ok := queryCodes[name]
	if !ok {
		return name, "Sender"
	}
	if c.status >= 500 {
		return c.code, "Receiver"
	}
	return c.code, "Sender"
}

// JSONErrorName gives the JSON-protocol error name (the model's shape name,
// as the SDK's deserializer expects in __type) of an error an emulator
// wrote with its Query code: AWS.SimpleQueueService.NonExistentQueue is
// QueueDoesNotExist. Any other name is returned reduced to itself.
func JSONErrorName(t string) string {
	name := jsonErrorName(t)
	if n, ok := jsonNameByQueryCode[name]; ok {
		return n
	}
	return name
}

var jsonNameByQueryCode = func() map[string]string {
	m := make(map[string]string, len(queryCodes))
	for name, c := range queryCodes {
		if c.code != name {
			m[c.code] = name
		}
	}
	return m
}()
