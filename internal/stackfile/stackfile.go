package stackfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultPath is where the local cloud writes the stack file, relative to the
// repository root it runs in.
const DefaultPath = ".club/stack.json"

// Stack holds the outputs of a running stack.
type Stack struct {
	// Endpoint is the AWS API endpoint (AWS_ENDPOINT_URL), for example
	// http://127.0.0.1:4566.
	Endpoint string `json:"endpoint"`
	// APIURL is the base URL of the HTTP API, for example http://127.0.0.1:3000.
	APIURL string `json:"api_url"`
	// IssuerURL is the JWT issuer the API's authorizer trusts (the "iss" claim).
	IssuerURL string `json:"issuer_url"`
	// JWTAudience is the audience the authorizer accepts (the Cognito app
	// client id on AWS).
	JWTAudience string `json:"jwt_audience"`
	// IssuerKeyFile is the PEM file holding the local issuer's signing key.
	// Only the local cloud has one. A relative path is relative to the
	// directory of the stack file; see IssuerKeyPath.
	IssuerKeyFile string `json:"issuer_key_file,omitempty"`

	// MailURL and PaymentURL are the base URLs of the mail and payment
	// providers: the local sandboxes, or empty where the real ones are used.
	MailURL    string `json:"mail_url,omitempty"`
	PaymentURL string `json:"payment_url,omitempty"`

	// The following maps are keyed by logical resource id.

	Tables        map[string]string `json:"tables,omitempty"`         // table name
	Queues        map[string]string `json:"queues,omitempty"`         // queue URL
	Topics        map[string]string `json:"topics,omitempty"`         // topic ARN
	Functions     map[string]string `json:"functions,omitempty"`      // function name
	StateMachines map[string]string `json:"state_machines,omitempty"` // state machine ARN
	Buckets       map[string]string `json:"buckets,omitempty"`        // bucket name
	// Outputs are the template's Outputs section, by output name.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// ErrNotFound is returned (wrapped) by Load when the file does not exist,
// which usually means the stack is not running.
var ErrNotFound = errors.New("stack file not found")

// Load reads the stack file at path.
func Load(path string) (*Stack, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (is the local cloud running? start it with `make run`)", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read stack file: %w", err)
	}
	var s Stack
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse stack file %s: %w", path, err)
	}
	return &s, nil
}

// Save writes the stack file at path, creating its directory. The file is
// replaced atomically: it is written to a temporary file beside it and
// renamed, so a concurrent Load sees either the old or the new content.
func (s *Stack) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stack file: %w", err)
	}
	data = append(data, '\n')

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create stack file directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".stack-*.json")
	if err != nil {
		return fmt.Errorf("create temporary stack file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename

	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write stack file: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write stack file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write stack file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace stack file: %w", err)
	}
	return nil
}

// IssuerKeyPath returns the issuer key file as a path usable from the current
// directory: an absolute IssuerKeyFile is returned as is, a relative one is
// joined to the directory of stackPath (the file s was loaded from), so that
// the .club directory can be moved or read from elsewhere. It returns "" when
// the stack has no issuer key.
func (s *Stack) IssuerKeyPath(stackPath string) string {
	if s.IssuerKeyFile == "" || filepath.IsAbs(s.IssuerKeyFile) {
		return s.IssuerKeyFile
	}
	return filepath.Join(filepath.Dir(stackPath), s.IssuerKeyFile)
}
