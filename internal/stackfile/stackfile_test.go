package stackfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/stackfile"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "stack.json")
	want := &stackfile.Stack{
		Endpoint:      "http://127.0.0.1:4566",
		APIURL:        "http://127.0.0.1:3000",
		IssuerURL:     "http://127.0.0.1:3000/issuer",
		JWTAudience:   "club-local",
		IssuerKeyFile: "issuer-key.pem",
		Tables:        map[string]string{"ClubTable": "club"},
		Queues:        map[string]string{"NotificationsQueue": "http://127.0.0.1:4566/000000000000/notifications"},
		Topics:        map[string]string{"EventsTopic": "arn:aws:sns:us-east-1:000000000000:club-events"},
		Functions:     map[string]string{"ApiFunction": "club-api"},
		StateMachines: map[string]string{"PurchaseSaga": "arn:aws:states:us-east-1:000000000000:stateMachine:purchase"},
		Buckets:       map[string]string{"ExportsBucket": "club-exports"},
		Outputs:       map[string]string{"ApiUrl": "http://127.0.0.1:3000"},
	}
	require.NoError(t, want.Save(path))
	// Saving again replaces the file rather than failing.
	require.NoError(t, want.Save(path))

	got, err := stackfile.Load(path)
	require.NoError(t, err)
	require.Equal(t, want, got)

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())

	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestWireFieldNames(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stack.json")
	doc := `{"endpoint":"e","api_url":"a","issuer_url":"i","jwt_audience":"aud","issuer_key_file":"k",
		"tables":{"T":"t"},"queues":{"Q":"q"},"topics":{"S":"s"},"functions":{"F":"f"},
		"state_machines":{"M":"m"},"buckets":{"B":"b"},"outputs":{"O":"o"}}`
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))

	s, err := stackfile.Load(path)
	require.NoError(t, err)
	require.Equal(t, "e", s.Endpoint)
	require.Equal(t, "a", s.APIURL)
	require.Equal(t, "i", s.IssuerURL)
	require.Equal(t, "aud", s.JWTAudience)
	require.Equal(t, "k", s.IssuerKeyFile)
	require.Equal(t, "t", s.Tables["T"])
	require.Equal(t, "q", s.Queues["Q"])
	require.Equal(t, "s", s.Topics["S"])
	require.Equal(t, "f", s.Functions["F"])
	require.Equal(t, "m", s.StateMachines["M"])
	require.Equal(t, "b", s.Buckets["B"])
	require.Equal(t, "o", s.Outputs["O"])
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	_, err := stackfile.Load(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, stackfile.ErrNotFound)
	require.ErrorContains(t, err, "missing.json")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
	_, err = stackfile.Load(bad)
	require.ErrorContains(t, err, "parse stack file")
	require.NotErrorIs(t, err, stackfile.ErrNotFound)
}

func TestIssuerKeyPath(t *testing.T) {
	t.Parallel()
	abs := filepath.Join(t.TempDir(), "key.pem")
	tests := []struct {
		name, keyFile, stackPath, want string
	}{
		{"none", "", ".club/stack.json", ""},
		{"relative to the stack file", "issuer-key.pem", filepath.Join(".club", "stack.json"), filepath.Join(".club", "issuer-key.pem")},
		{"absolute", abs, filepath.Join(".club", "stack.json"), abs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &stackfile.Stack{IssuerKeyFile: tt.keyFile}
			require.Equal(t, tt.want, s.IssuerKeyPath(tt.stackPath))
		})
	}
}
