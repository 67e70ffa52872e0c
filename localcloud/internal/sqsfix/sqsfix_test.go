package sqsfix

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func str(s string) *string { return &s }

// TestMD5OfAttributesFollowsTheDocumentedEncoding: the digest of a single
// string attribute, computed independently of this package (a published
// example of the SQS algorithm), and the binary transport byte.
func TestMD5OfAttributesFollowsTheDocumentedEncoding(t *testing.T) {
	t.Parallel()
	require.Equal(t, "19e27d4e946b072f3f58da80d94fd778",
		md5OfAttributes(map[string]attribute{"attribName1": {DataType: "String", StringValue: str("attribValue 1")}}))
	require.Equal(t, "31a92b15d92f8db860eda32aceb656c3",
		md5OfAttributes(map[string]attribute{"binaryAttribute": {DataType: "Binary", BinaryValue: []byte("Hello binary world!")}}))
	require.Empty(t, md5OfAttributes(nil), "no attributes, no digest")
}

// TestWantsAttribute: All and .* ask for everything, "prefix.*" for the
// names under prefix, a name for itself.
func TestWantsAttribute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		asked []string
		name  string
		want  bool
	}{
		{nil, "a", false},
		{[]string{"All"}, "a", true},
		{[]string{".*"}, "a", true},
		{[]string{"a"}, "a", true},
		{[]string{"a"}, "ab", false},
		{[]string{"event.*"}, "event.type", true},
		{[]string{"event.*"}, "eventtype", false},
		{[]string{"event.*"}, "event", false},
	} {
		require.Equal(t, tc.want, wantsAttribute(tc.asked, tc.name), "%v asks for %s", tc.asked, tc.name)
	}
}
