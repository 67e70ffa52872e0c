package store

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute and key names shared by the items. See doc.go for the layout.
const (
	attrPK  = "pk"
	attrSK  = "sk"
	attrTTL = "ttl" // epoch seconds; the tables' TTL attribute (a reserved word: always use #ttl)

	attrEventID          = "event_id"
	attrUnpublishedShard = "unpublished_shard"
	attrCreatedAt        = "created_at"

	indexUnpublished = "unpublished"

	// Sparse indexes of the club table: only class items carry
	// class_teacher_id, only operation items created_by.
	attrClassTeacher         = "class_teacher_id"
	attrStartsAt             = "starts_at"
	attrCreatedBy            = "created_by"
	indexClassesByTeacher    = "classes_by_teacher"
	indexOperationsByCreator = "operations_by_creator"
)

// unpublishedShards spreads pending outbox rows over this many partitions of
// the "unpublished" index: with a single value, every outbox insert would
// write to one index partition, whose throughput limit throttles the base
// table's writes under load. The sweeper queries all shards.
const unpublishedShards = 8

func unpublishedShard(eventID string) string {
	h := fnv.New32a()
	h.Write([]byte(eventID))
	return strconv.Itoa(int(h.Sum32() % unpublishedShards))
}

// Keys of the club table. Ids are placed after a fixed prefix and never
// followed by another id in the same attribute, so ids containing '#' cannot
// make two keys collide.
func classKey(classID string) (pk, sk string) { return "CLASS#" + classID, "CLASS" }
func memberKey(classID, studentID string) (pk, sk string) {
	return "CLASS#" + classID, "MEMBER#" + studentID
}
func rosterEntryKey(classID, enrollmentID string) (pk, sk string) {
	return "CLASS#" + classID, "ROSTER#" + enrollmentID
}
func rosterMetaKey(classID string) (pk, sk string)      { return "CLASS#" + classID, "ROSTER" }
func statsKey(classID string) (pk, sk string)           { return "CLASS#" + classID, "STATS" }
func enrollmentKey(id string) (pk, sk string)           { return "ENROLLMENT#" + id, "ENROLLMENT" }
func idempotencyKey(caller, key string) (pk, sk string) { return "IDEM#" + caller, "KEY#" + key }
func profileKey(userID string) (pk, sk string)          { return "USER#" + userID, "PROFILE" }
func leaseKey(name string) (pk, sk string)              { return "LEASE#" + name, "LEASE" }

// Consumer names are validated (no '#'), so consumer and event id can share
// the partition key; one partition per row spreads inbox writes.
func inboxKey(consumer, eventID string) (pk, sk string) {
	return "INBOX#" + consumer + "#" + eventID, "INBOX"
}

const rosterEntryPrefix = "ROSTER#"

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

func outboxKey(eventID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrEventID: str(eventID)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// timeLayout is fixed-width UTC with nanoseconds: lossless, and string order
// is time order (the outbox index sorts on it).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("attribute %s: %w", field, err)
	}
	return t.UTC(), nil
}

// expiry is the TTL value for a row that may be deleted after t.
func expiry(t time.Time) int64 { return t.Unix() }
