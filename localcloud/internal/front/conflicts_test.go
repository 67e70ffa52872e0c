package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

func conflictsEnv(t *testing.T) (*dynamodb.Client, *Front, string, string) {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	f, err := New(k.URL, Routes{}, NewCounter())
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/_club/dynamodb/conflicts", f.Conflicts()) // as the local cloud's control routes have it
	mux.Handle("/", f)
	url := newServer(t, mux)
	db := dynamodb.NewFromConfig(sdkConfig(url, "test", "test"), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	table := uniqueName("conflicts")
	_, err = db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	return db, f, url, table
}

func switchConflicts(t *testing.T, url string, body string) ConflictStats {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewBufferString(body))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var st ConflictStats
	require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
	return st
}

// increment is a transaction on the shared counter item and an item of its
// own, as an enrollment is (the class and the enrollment).
func increment(table, own string) *dynamodb.TransactWriteItemsInput {
	return &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Update: &ddbtypes.Update{TableName: aws.String(table),
			Key:                       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "counter"}},
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}}},
		{Put: &ddbtypes.Put{TableName: aws.String(table),
			Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: own}}}},
	}}
}

// With conflicts on, transactions on one item at once meet
// TransactionConflict on that item (None on the others), and every one
// that succeeded was carried out; with them off, none conflicts.
func TestConcurrentTransactionsOnOneItemConflict(t *testing.T) {
	t.Parallel()
	db, f, url, table := conflictsEnv(t)
	st := switchConflicts(t, url+"/_club/dynamodb/conflicts", `{"enabled": true, "hold_ms": 50}`)
	require.True(t, st.Settings.Enabled)

	const n = 8
	errs := atOnce(n, func(i int) error {
		_, err := db.TransactWriteItems(t.Context(), increment(table, "own-"+strconv.Itoa(i)))
		return err
	})
	succeeded, conflicted := 0, 0
	for _, err := range errs {
		if err == nil {
			succeeded++
			continue
		}
		var tce *ddbtypes.TransactionCanceledException
		require.True(t, errors.As(err, &tce), "cancelled as DynamoDB cancels: %v", err)
		require.Len(t, tce.CancellationReasons, 2)
		require.Equal(t, "TransactionConflict", aws.ToString(tce.CancellationReasons[0].Code), "the shared item")
		require.Equal(t, "None", aws.ToString(tce.CancellationReasons[1].Code), "the transaction's own item")
		conflicted++
	}
	require.GreaterOrEqual(t, succeeded, 1)
	require.GreaterOrEqual(t, conflicted, 1, "eight at once on one item, each holding it 50 ms")
	item, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "counter"}}})
	require.NoError(t, err)
	require.Equal(t, &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(succeeded)}, item.Item["n"], "each success counted once, no conflict counted")
	stats := f.ConflictStats()
	require.EqualValues(t, conflicted, stats.Conflicts)
	require.EqualValues(t, n, stats.Transactions)

	// Off: the same race never conflicts.
	req, _ := http.NewRequest(http.MethodDelete, url+"/_club/dynamodb/conflicts", nil)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	errs = atOnce(n, func(i int) error {
		_, err := db.TransactWriteItems(t.Context(), increment(table, "off-"+strconv.Itoa(i)))
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, conflicted, f.ConflictStats().Conflicts)
}

// Transactions on different items never conflict; a Put's item is found by
// its table's key, whatever else the item holds.
func TestTransactionsOnDifferentItemsDoNotConflict(t *testing.T) {
	t.Parallel()
	db, f, url, table := conflictsEnv(t)
	switchConflicts(t, url+"/_club/dynamodb/conflicts", `{"enabled": true, "hold_ms": 50}`)
	const n = 8
	errs := atOnce(n, func(i int) error {
		_, err := db.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "item-" + strconv.Itoa(i)}, "same": &ddbtypes.AttributeValueMemberS{Value: "in every item"}}}},
		}})
		return err
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, f.ConflictStats().Conflicts)
	require.EqualValues(t, n, f.ConflictStats().Transactions)
}

// Bad settings are refused with a reason and change nothing.
func TestConflictSettingsAreChecked(t *testing.T) {
	t.Parallel()
	_, f, url, _ := conflictsEnv(t)
	for _, body := range []string{`{"enabled": true, "hold_ms": 5000}`, `{"enabled": "yes"}`, `{"enable": true}`, `not json`} {
		req, _ := http.NewRequest(http.MethodPut, url+"/_club/dynamodb/conflicts", bytes.NewBufferString(body))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e struct {
			Error struct{ Code, Message string }
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&e))
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, body)
		require.Equal(t, "invalid_settings", e.Error.Code, body)
		require.NotEmpty(t, e.Error.Message)
	}
	require.False(t, f.ConflictStats().Settings.Enabled)
}

// atOnce runs do(0) … do(n-1) concurrently and returns their errors.
func atOnce(n int, do func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = do(i)
		}()
	}
	wg.Wait()
	return errs
}
