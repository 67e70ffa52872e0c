package ddbstream

import (
	"fmt"
	"strings"
	"testing"
)

// enrollmentTransaction is a TransactWriteItems body shaped like the club's
// enrollment: four items of a table without a stream and an outbox row.
func enrollmentTransaction() []byte {
	var items []string
	for i := range 4 {
		var attrs []string
		for a := range 14 {
			attrs = append(attrs, fmt.Sprintf(`"attr_%d":{"S":"value %d of item %d, long enough to be a real field"}`, a, a, i))
		}
		items = append(items, fmt.Sprintf(`{"Put":{"TableName":"club","ConditionExpression":"attribute_not_exists(pk)","Item":{"pk":{"S":"ITEM#%d"},"sk":{"S":"A"},%s}}}`, i, strings.Join(attrs, ",")))
	}
	items = append(items, `{"Put":{"TableName":"outbox","Item":{"pk":{"S":"EVENT#1"},"sk":{"S":"EVENT"},"payload":{"S":"{\"type\":\"enrollment.created\"}"}}}}`)
	return []byte(`{"ClientRequestToken":"token","TransactItems":[` + strings.Join(items, ",") + `]}`)
}

// BenchmarkWriteTargets is the recorder's parse of every write: it runs for
// writes to tables without a stream too, so it decodes no item it does not
// have to.
func BenchmarkWriteTargets(b *testing.B) {
	body := enrollmentTransaction()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		tgs, err := writeTargets("TransactWriteItems", body)
		if err != nil || len(tgs) != 5 {
			b.Fatal(len(tgs), err)
		}
	}
}
