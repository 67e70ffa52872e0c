package localcloud

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// declaredParameters lists the parameter names a template declares, so the
// local cloud can supply its own values (sandbox URLs, secrets) only to
// templates that ask for them. Short-form tags elsewhere in the template do
// not matter: only the Parameters keys are read.
func declaredParameters(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Parameters map[string]yaml.Node `yaml:"Parameters"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]bool, len(doc.Parameters))
	for name := range doc.Parameters {
		out[name] = true
	}
	return out, nil
}

// localSecret returns the secret stored in file, creating a random one on
// first use. Secrets live in the state directory, never in the repository.
func localSecret(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		return "", err
	}
	return secret, nil
}
