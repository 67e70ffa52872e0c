package adversary

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// awsError is an AWS error answer in the call's protocol.
func awsError(c *call, status int, code, message string) *answer {
	h := http.Header{}
	switch c.protocol {
	case protoQuery:
		h.Set("Content-Type", "text/xml")
		body := fmt.Sprintf(`<ErrorResponse><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>adversary</RequestId></ErrorResponse>`,
			faultType(status), code, message)
		return &answer{status: status, header: h, body: []byte(body)}
	case protoREST:
		h.Set("Content-Type", "application/json")
		h.Set("X-Amzn-Errortype", code)
		body, _ := json.Marshal(map[string]string{"Type": faultType(status), "message": message})
		return &answer{status: status, header: h, body: body}
	}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Errortype", code)
	typ := code
	if c.service == "dynamodb" {
		typ = "com.amazonaws.dynamodb.v20120810#" + code
	}
	body, _ := json.Marshal(map[string]string{"__type": typ, "message": message})
	return &answer{status: status, header: h, body: body}
}

func faultType(status int) string {
	if status >= 500 {
		return "Receiver"
	}
	return "Sender"
}
