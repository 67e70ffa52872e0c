package store

import (
	"fmt"
	"strconv"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/clubdev/club/internal/club/outbox"
)

// OutboxRowFromStreamImage decodes the NEW_IMAGE of an outbox table stream
// record (an INSERT, as the relay's filter selects) into a Row. The relay
// publishes Row.Payload as is and then calls outbox.Store.MarkPublished with
// Row.EventID.
func OutboxRowFromStreamImage(image map[string]lambdaevents.DynamoDBAttributeValue) (outbox.Row, error) {
	text := func(name string, required bool) (string, error) {
		av, ok := image[name]
		if !ok || av.IsNull() {
			if required {
				return "", fmt.Errorf("outbox stream image: missing %s", name)
			}
			return "", nil
		}
		if av.DataType() != lambdaevents.DataTypeString {
			return "", fmt.Errorf("outbox stream image: %s is not a string", name)
		}
		return av.String(), nil
	}
	var it outboxItem
	for _, f := range []struct {
		name     string
		dst      *string
		required bool
	}{
		{"event_id", &it.EventID, true},
		{"type", &it.Type, true},
		{"aggregate_id", &it.AggregateID, true},
		{"payload", &it.Payload, true},
		{"created_at", &it.CreatedAt, true},
		{"status", &it.Status, true},
		{"published_at", &it.PublishedAt, false},
	} {
		v, err := text(f.name, f.required)
		if err != nil {
			return outbox.Row{}, err
		}
		*f.dst = v
	}
	if av, ok := image[attrTTL]; ok && av.DataType() == lambdaevents.DataTypeNumber {
		ttl, err := strconv.ParseInt(av.Number(), 10, 64)
		if err != nil {
			return outbox.Row{}, fmt.Errorf("outbox stream image: ttl: %w", err)
		}
		it.TTL = ttl
	}
	return it.row()
}
