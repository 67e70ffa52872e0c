package ddbstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShardIteratorRoundTripAndGarbage(t *testing.T) {
	t.Parallel()
	it := shardIterator{StreamARN: StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/t"), After: 42, IssuedAt: 7}
	back, err := parseIterator(it.String())
	require.NoError(t, err)
	assert.Equal(t, it, back)

	for _, garbage := range []string{
		"",
		"abc",
		iteratorPrefix,
		iteratorPrefix + "!!!",
		iteratorPrefix + "bm90IGpzb24",     // "not json"
		iteratorPrefix + "e30",             // {}
		it.String()[:len(it.String())-3],   // truncated
		"ddbstream.v0." + it.String()[13:], // another version
	} {
		_, err := parseIterator(garbage)
		assert.ErrorIs(t, err, errBadIterator, "%q", garbage)
	}
}

func TestRequestDigestIgnoresMemberOrderOnly(t *testing.T) {
	t.Parallel()
	a, err := requestDigest([]byte(`{"T":"x","Item":{"a":{"N":"1.50"},"b":{"S":"y"}}}`))
	require.NoError(t, err)
	b, err := requestDigest([]byte(`{ "Item": {"b":{"S":"y"}, "a":{"N":"1.50"}}, "T":"x" }`))
	require.NoError(t, err)
	assert.Equal(t, a, b, "same request, members in another order")

	c, err := requestDigest([]byte(`{"T":"x","Item":{"a":{"N":"1.5"},"b":{"S":"y"}}}`))
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "a different request")

	_, err = requestDigest([]byte(`{`))
	assert.Error(t, err)
}

func TestEachMemberKeepsDocumentOrder(t *testing.T) {
	t.Parallel()
	var names []string
	err := eachMember(json.RawMessage(`{"z":1,"a":[2],"m":{"x":3}}`), func(name string, _ json.RawMessage) error {
		names = append(names, name)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"z", "a", "m"}, names)
	assert.Error(t, eachMember(json.RawMessage(`[1]`), func(string, json.RawMessage) error { return nil }))
}

func TestTokenStore(t *testing.T) {
	t.Parallel()
	now := time.Now()
	store := newTokenStore(func() time.Time { return now })
	digest := [32]byte{1}
	other := [32]byte{2}
	ok := newResponse()
	ok.WriteHeader(http.StatusOK)
	ok.body.WriteString("{}")
	failed := newResponse()
	failed.WriteHeader(http.StatusBadRequest)

	code := func(err error) string {
		var ae *apiError
		if errors.As(err, &ae) {
			return ae.Code
		}
		return ""
	}

	replay, err := store.begin("t", digest)
	require.NoError(t, err)
	require.Nil(t, replay, "first use runs")

	_, err = store.begin("t", digest)
	assert.Equal(t, "TransactionInProgressException", code(err))
	_, err = store.begin("t", other)
	assert.Equal(t, "IdempotentParameterMismatchException", code(err))

	store.finish("t", ok)
	replay, err = store.begin("t", digest)
	require.NoError(t, err)
	require.NotNil(t, replay)
	assert.Equal(t, http.StatusOK, replay.status)
	assert.Equal(t, "{}", replay.body.String())
	_, err = store.begin("t", other)
	assert.Equal(t, "IdempotentParameterMismatchException", code(err))

	replay, err = store.begin("f", digest)
	require.NoError(t, err)
	require.Nil(t, replay)
	store.finish("f", failed)
	replay, err = store.begin("f", other)
	require.NoError(t, err)
	assert.Nil(t, replay, "a failed request frees its token")

	now = now.Add(tokenWindow)
	replay, err = store.begin("t", other)
	require.NoError(t, err)
	assert.Nil(t, replay, "the token expired")
	assert.Empty(t, store.expiry, "expired tokens are dropped")
}

func TestItemSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		item string
		want int64
	}{
		{"string counts bytes", `{"ab":{"S":"ü"}}`, 2 + 2},
		{"number by significant digits", `{"n":{"N":"-001234.5000"}}`, 1 + (5+1)/2 + 1},
		{"binary", `{"b":{"B":"AAEC"}}`, 1 + 3},
		{"bool and null", `{"t":{"BOOL":true},"z":{"NULL":true}}`, 1 + 1 + 1 + 1},
		{"list", `{"l":{"L":[{"S":"ab"},{"N":"1"}]}}`, 1 + 3 + (1 + 2) + (1 + 2)},
		{"map", `{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + 1 + 1 + 1},
		{"sets", `{"s":{"SS":["a","bc"]},"x":{"NS":["10"]}}`, 1 + 3 + 1 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var item map[string]events.DynamoDBAttributeValue
			require.NoError(t, json.Unmarshal([]byte(tt.item), &item))
			assert.Equal(t, tt.want, itemSize(item))
		})
	}
}

func TestNewRecordSkipsUnchangedItems(t *testing.T) {
	t.Parallel()
	w := itemWrite{table: tableMeta{Name: "t", ARN: "arn", ViewType: ViewNewAndOldImages,
		KeySchema: []KeyElement{{"pk", "HASH"}}}, key: map[string]json.RawMessage{"pk": json.RawMessage(`{"S":"a"}`)}}
	a := image(`{"pk":{"S":"a"},"v":{"N":"1"}}`)
	b := image(`{"pk":{"S":"a"},"v":{"N":"2"}}`)
	tests := []struct {
		name     string
		old, new image
		want     string // "" for no record
	}{
		{"insert", nil, a, "INSERT"},
		{"modify", a, b, "MODIFY"},
		{"remove", a, nil, "REMOVE"},
		{"same item", a, a, ""},
		{"missing before and after", nil, image("null"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, changed, err := newRecord(w, tt.old, tt.new, time.Now())
			require.NoError(t, err)
			assert.Equal(t, tt.want != "", changed)
			assert.Equal(t, tt.want, rec.EventName)
		})
	}
}

func TestFixCancellationReasons(t *testing.T) {
	t.Parallel()
	resp := newResponse()
	resp.WriteHeader(http.StatusBadRequest)
	resp.body.WriteString(`{"__type":"TransactionCanceledException","message":"Transaction cancelled [CancellationReason]",` +
		`"CancellationReasons":[{"Code":""},{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}]}`)
	require.NoError(t, fixCancellationReasons(resp))
	assert.JSONEq(t, `{"__type":"TransactionCanceledException",`+
		`"message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]",`+
		`"CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}]}`,
		resp.body.String())

	other := newResponse()
	other.body.WriteString(`{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"x"}`)
	require.NoError(t, fixCancellationReasons(other))
	assert.Equal(t, `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"x"}`, other.body.String())
}

func TestLogWaitReturnsOnceARecordIsThere(t *testing.T) {
	t.Parallel()
	l := NewLog()
	arn := StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/w")
	require.ErrorIs(t, l.Wait(context.Background(), arn, 0), ErrNoSuchStream)
	l.Register(arn)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, l.Wait(ctx, arn, 0), context.Canceled, "nothing there yet")

	waited := make(chan error, 1)
	go func() { waited <- l.Wait(context.Background(), arn, 0) }()
	l.Append(arn, events.DynamoDBEventRecord{EventName: "INSERT"})
	require.NoError(t, <-waited)
	require.NoError(t, l.Wait(ctx, arn, 0), "a record after 0 is there: no wait")
	recs, err := l.Read(ctx, arn, 0, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1, "Wait read nothing")
}

func TestRequestDigestIsCanonical(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{`{"a":[1,{"y":true,"x":null}],"b":"s\"t"}`, " { \"b\" : \"s\\\"t\" ,\n\"a\":[ 1 , {\"x\":null,\"y\":true} ] } "},
		{`{}`, ` { } `},
		{`[]`, `[ ]`},
		{`{"n":-1.5e+3}`, `{ "n" : -1.5e+3 }`},
	}
	for _, pair := range same {
		a, err := requestDigest([]byte(pair[0]))
		require.NoError(t, err, pair[0])
		b, err := requestDigest([]byte(pair[1]))
		require.NoError(t, err, pair[1])
		assert.Equal(t, a, b, pair)
	}
	differ := [][]string{
		{`[1,2]`, `[2,1]`},
		{`{"a":"1"}`, `{"a":1}`},
		{`{"a":{"b":1}}`, `{"a":{"b":1,"c":2}}`},
	}
	for _, pair := range differ {
		a, err := requestDigest([]byte(pair[0]))
		require.NoError(t, err)
		b, err := requestDigest([]byte(pair[1]))
		require.NoError(t, err)
		assert.NotEqual(t, a, b, pair)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":}`, `[1,]`, `{"a":1,}`, `"open`, `tru`, `{"a":1} x`, `{"a" 1}`, `[1 2]`} {
		_, err := requestDigest([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// The canonical form is what encoding/json gives a decoded and re-encoded
// request, for the shapes the SDK sends.
func TestRequestDigestMatchesDecodeAndEncode(t *testing.T) {
	t.Parallel()
	body := []byte(`{"TransactItems":[{"Put":{"TableName":"club","Item":{"pk":{"S":"A#1"},"n":{"N":"12.50"},"l":{"L":[{"S":"x"},{"BOOL":true}]}},"ConditionExpression":"attribute_not_exists(pk)"}},{"Update":{"Key":{"sk":{"S":"B"},"pk":{"S":"C"}},"ExpressionAttributeValues":{":one":{"N":"1"}}}}],"ClientRequestToken":"t-1"}`)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	want, err := json.Marshal(v)
	require.NoError(t, err)
	got, err := requestDigest(body)
	require.NoError(t, err)
	assert.Equal(t, sha256.Sum256(want), got)
}

func TestTokenAndDigestFindsTheTopLevelToken(t *testing.T) {
	t.Parallel()
	token, d1, err := tokenAndDigest([]byte(`{"TransactItems":[{"Put":{"ClientRequestToken":"inner"}}],"ClientRequestToken":"t-\u00e9"}`))
	require.NoError(t, err)
	assert.Equal(t, "t-é", token)
	_, d2, err := tokenAndDigest([]byte(`{"ClientRequestToken":"t-\u00e9","TransactItems":[{"Put":{"ClientRequestToken":"inner"}}]}`))
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
	token, _, err = tokenAndDigest([]byte(`{"TransactItems":[{"Put":{"ClientRequestToken":"inner"}}]}`))
	require.NoError(t, err)
	assert.Empty(t, token, "only the request's own token counts")
}
