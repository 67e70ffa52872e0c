package ddbstream

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Fixed fields of every local stream record.
const (
	eventSource  = "aws:dynamodb"
	eventVersion = "1.1"
	awsRegion    = "us-east-1"
)

// image is an item as DynamoDB JSON ({"attr": {"S": "x"}, ...}); nil when
// the item does not exist.
type image json.RawMessage

func (im image) exists() bool {
	s := bytes.TrimSpace(im)
	return len(s) > 0 && !bytes.Equal(s, []byte("null"))
}

// sameImage reports whether two images hold the same item. kumo renders
// items canonically (sorted attribute names), so comparing bytes suffices.
func sameImage(a, b image) bool {
	if !a.exists() || !b.exists() {
		return a.exists() == b.exists()
	}
	return bytes.Equal(a, b)
}

// newRecord builds the stream record of a change of one item from old to
// new. changed is false when the write left the item as it was: like AWS,
// which writes no record for a PutItem or UpdateItem that changes no data,
// and none for deleting an item that does not exist.
func newRecord(w itemWrite, old, new image, at time.Time) (rec events.DynamoDBEventRecord, changed bool, err error) {
	if sameImage(old, new) {
		return rec, false, nil
	}
	change := events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
		StreamViewType:              w.table.ViewType,
	}
	if change.Keys, err = decodeAttributes(w.key); err != nil {
		return rec, false, fmt.Errorf("keys: %w", err)
	}
	view := w.table.ViewType
	if old.exists() && (view == ViewOldImage || view == ViewNewAndOldImages) {
		if change.OldImage, err = decodeImage(old); err != nil {
			return rec, false, fmt.Errorf("old image: %w", err)
		}
	}
	if new.exists() && (view == ViewNewImage || view == ViewNewAndOldImages) {
		if change.NewImage, err = decodeImage(new); err != nil {
			return rec, false, fmt.Errorf("new image: %w", err)
		}
	}
	change.SizeBytes = itemSize(change.Keys) + itemSize(change.OldImage) + itemSize(change.NewImage)

	name := events.DynamoDBOperationTypeModify
	switch {
	case !old.exists():
		name = events.DynamoDBOperationTypeInsert
	case !new.exists():
		name = events.DynamoDBOperationTypeRemove
	}
	return events.DynamoDBEventRecord{
		AWSRegion:    awsRegion,
		Change:       change,
		EventID:      newEventID(),
		EventName:    string(name),
		EventSource:  eventSource,
		EventVersion: eventVersion,
	}, true, nil
}

// decodeImage converts DynamoDB JSON to the attribute values of aws-lambda-go:
// both use the same wire shape ({"S": ...}, {"N": "..."}, {"M": {...}}, ...).
func decodeImage(im image) (map[string]events.DynamoDBAttributeValue, error) {
	var out map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(im, &out); err != nil {
		return nil, fmt.Errorf("decode item: %w", err)
	}
	return out, nil
}

func decodeAttributes(attrs map[string]json.RawMessage) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(attrs))
	for name, raw := range attrs {
		var v events.DynamoDBAttributeValue
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decode attribute %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// newEventID returns a random 128-bit identifier in hex, the length of the
// eventIDs AWS writes.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// itemSize approximates the size of an item by DynamoDB's rules: each
// attribute counts its name plus its value.
func itemSize(item map[string]events.DynamoDBAttributeValue) int64 {
	var n int64
	for name, v := range item {
		n += int64(len(name)) + valueSize(v)
	}
	return n
}

// valueSize follows "Item sizes and formats" of the DynamoDB developer guide:
// strings and binaries count their bytes, numbers about one byte per two
// significant digits plus one, booleans and nulls one byte, lists and maps
// three bytes plus one per element.
func valueSize(v events.DynamoDBAttributeValue) int64 {
	switch v.DataType() {
	case events.DataTypeString:
		return int64(len(v.String()))
	case events.DataTypeNumber:
		return numberSize(v.Number())
	case events.DataTypeBinary:
		return int64(len(v.Binary()))
	case events.DataTypeBoolean, events.DataTypeNull:
		return 1
	case events.DataTypeStringSet:
		var n int64
		for _, s := range v.StringSet() {
			n += int64(len(s))
		}
		return n
	case events.DataTypeNumberSet:
		var n int64
		for _, s := range v.NumberSet() {
			n += numberSize(s)
		}
		return n
	case events.DataTypeBinarySet:
		var n int64
		for _, b := range v.BinarySet() {
			n += int64(len(b))
		}
		return n
	case events.DataTypeList:
		n := int64(3)
		for _, e := range v.List() {
			n += 1 + valueSize(e)
		}
		return n
	case events.DataTypeMap:
		n := int64(3)
		for name, e := range v.Map() {
			n += 1 + int64(len(name)) + valueSize(e)
		}
		return n
	}
	return 0
}

func numberSize(s string) int64 {
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Trim(strings.NewReplacer("-", "", "+", "", ".", "").Replace(mantissa), "0")
	return int64(len(digits)+1)/2 + 1
}
