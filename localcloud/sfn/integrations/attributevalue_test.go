package integrations

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAttributeValuesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, av := range []string{
		`{"S":"text"}`, `{"N":"12.5"}`, `{"B":"aGVsbG8="}`, `{"BOOL":false}`, `{"NULL":true}`,
		`{"SS":["a","b"]}`, `{"NS":["1","2"]}`, `{"BS":["aGk=","eW8="]}`,
		`{"L":[{"S":"x"},{"N":"1"},{"L":[]}]}`, `{"M":{"inner":{"M":{"deep":{"BOOL":true}}},"empty":{"M":{}}}}`,
	} {
		got, err := attributeFromJSON(json.RawMessage(av))
		require.NoError(t, err, av)
		back, err := json.Marshal(attributeToJSON(got))
		require.NoError(t, err)
		require.JSONEq(t, av, string(back))
	}
}

func TestAttributeValueErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{`"plain"`, `{}`, `{"S":"a","N":"1"}`, `{"N":12}`, `{"B":"not base64!"}`, `{"X":"?"}`, `{"L":[{"S":1}]}`, `{"BS":[1]}`} {
		_, err := attributeFromJSON(json.RawMessage(bad))
		require.Error(t, err, bad)
	}
}

func TestPayloadAndNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, `null`, string(payloadJSON(nil)))
	require.Equal(t, `{"a":1}`, string(payloadJSON([]byte(`{"a":1}`))))
	require.Equal(t, `"not json"`, string(payloadJSON([]byte(`not json`))))
	for in, want := range map[string]string{
		"fn": "fn", "fn:live": "fn", "000000000000:function:fn": "fn",
		"arn:aws:lambda:us-east-1:000000000000:function:fn": "fn", "arn:aws:lambda:us-east-1:000000000000:function:fn:3": "fn",
	} {
		require.Equal(t, want, functionName(in), in)
	}
}
