// Package schematest validates result documents against the JSON Schemas
// the project publishes in docs/schema, one per kind. Only tests import
// it (and through it the schema library).
package schematest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	mu      sync.Mutex
	schemas = map[string]*jsonschema.Schema{}
)

// Dir is docs/schema of the module, found from the working directory up.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "docs", "schema"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Schema compiles docs/schema/<kind>.json once.
func Schema(kind string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := schemas[kind]; ok {
		return s, nil
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join(dir, kind+".json"))
	if err != nil {
		return nil, fmt.Errorf("compile the schema of %s: %w", kind, err)
	}
	schemas[kind] = s
	return s, nil
}

// Check validates one document (a JSON object with a kind) against the
// schema of its kind, or each element of an array of documents.
func Check(data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	docs := []any{v}
	if a, ok := v.([]any); ok {
		docs = a
	}
	for i, d := range docs {
		obj, ok := d.(map[string]any)
		if !ok {
			return fmt.Errorf("document %d is not an object", i)
		}
		kind, ok := obj["kind"].(string)
		if !ok {
			return fmt.Errorf("document %d has no kind", i)
		}
		s, err := Schema(kind)
		if err != nil {
			return err
		}
		if err := s.Validate(d); err != nil {
			return fmt.Errorf("%s document does not fit docs/schema/%s.json: %w", kind, kind, err)
		}
	}
	return nil
}

// Validate fails t when data (named name in the message) does not fit
// the schema of its kind.
func Validate(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := Check(data); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}
