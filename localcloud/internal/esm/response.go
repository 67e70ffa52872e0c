package esm

import (
	"bytes"
	"encoding/json"
)

// batchResponse is the partial batch response a function returns when its
// mapping has ReportBatchItemFailures (events.SQSEventResponse and
// events.DynamoDBEventResponse share this shape). ItemIdentifier is a pointer
// so that a missing identifier can be told from an empty one.
type batchResponse struct {
	BatchItemFailures []struct {
		ItemIdentifier *string `json:"itemIdentifier"`
	} `json:"batchItemFailures"`
}

// parseBatchItemFailures decodes a partial batch response. It returns the
// reported identifiers, and ok=false when the response fails the whole batch.
//
// The rules are AWS's: an empty payload, null, an empty object or an empty
// or null list means complete success; a response that is not a JSON object
// or an item whose itemIdentifier is missing, null or empty means complete
// failure. Whether each identifier belongs to the batch is for the caller to
// check (an unknown identifier also fails the whole batch).
func parseBatchItemFailures(payload []byte) (ids []string, ok bool) {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		return nil, true
	}
	var resp batchResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		return nil, false
	}
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == nil || *f.ItemIdentifier == "" {
			return nil, false
		}
		ids = append(ids, *f.ItemIdentifier)
	}
	return ids, true
}
