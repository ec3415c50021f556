package report

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/tally"
)

// The documents in testdata/v1 are copies of the fixtures and JSON goldens
// as version 1 wrote them, before version 2. report reads them by
// upgrading them (the kinds' v1 functions); each must render exactly as
// its version 2 counterpart in testdata does, in every format, once that
// counterpart is stripped of what version 1 could not carry: the build,
// the start (but load's) and the command line of the envelope, and load's
// expected admissions per second.

// withoutV2Only returns d with the fields only version 2 has cleared.
func withoutV2Only(t *testing.T, d Document) Document {
	t.Helper()
	rv := reflect.ValueOf(d.Value)
	p := rv
	if rv.Kind() != reflect.Pointer {
		p = reflect.New(rv.Type())
		p.Elem().Set(rv)
	}
	h := headerOf(p.Interface())
	if h == nil {
		t.Fatalf("%s: %T has no header", d.Source, d.Value)
	}
	h.Tool, h.Command, h.StartedAt = nil, nil, time.Time{} // load's start is its own field, as in version 1
	if l, ok := p.Interface().(*tally.Result); ok && l.Expect != nil {
		l.Expect.ExpectedPerSecond = nil
	}
	if rv.Kind() != reflect.Pointer {
		d.Value = p.Elem().Interface()
	}
	return d
}

func TestVersion1RendersAsVersion2(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "v1", "*.json*"))
	if err != nil || len(names) < 10 {
		t.Fatalf("v1 documents: %v (%d found)", err, len(names))
	}
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			v1 := decodeFile(t, path)
			if v1.Version != 1 {
				t.Fatalf("%s is version %d, want 1", path, v1.Version)
			}
			v2 := decodeFile(t, filepath.Join("testdata", name))
			if v2.Version != 2 || v2.Kind != v1.Kind {
				t.Fatalf("testdata/%s is %s version %d, want %s version 2", name, v2.Kind, v2.Version, v1.Kind)
			}
			v2 = withoutV2Only(t, v2)
			for _, format := range []string{"text", "markdown", "junit", "github"} {
				var a, b bytes.Buffer
				if err := Render(&a, format, v1, goldenOptions); err != nil {
					t.Fatal(err)
				}
				if err := Render(&b, format, v2, goldenOptions); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Errorf("%s: version 1 renders differently from version 2 (- v2, + v1):\n%s", format, lineDiff(b.String(), a.String(), 2, 40))
				}
			}
			var a, b bytes.Buffer
			if err := HTML(&a, []Document{v1}, HTMLOptions{Generated: goldenTime}); err != nil {
				t.Fatal(err)
			}
			if err := HTML(&b, []Document{v2}, HTMLOptions{Generated: goldenTime}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("html: version 1 renders differently from version 2 (- v2, + v1):\n%s", lineDiff(b.String(), a.String(), 2, 40))
			}
		})
	}
}

func decodeFile(t *testing.T, path string) Document {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(%s): %v", path, err)
	}
	d.Source = filepath.Base(path)
	return d
}
