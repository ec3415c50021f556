package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes through Decode and, when they are a
// document, through every renderer: no panic, no endless loop, and output
// bounded by the input (a document cannot make a renderer allocate much
// more than it holds). Seeded with the testdata documents.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"kind":"race","kind":"load","version":1}`))
	f.Add([]byte(`{"kind":"load","version":1,"timeline":[{"second":-5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data)
		if err != nil {
			if bytes.ContainsAny([]byte(err.Error()), "\n\x1b") {
				t.Fatalf("Decode error is not one clean line: %q", err)
			}
			return
		}
		total := 0
		for _, format := range Formats(d.Kind) {
			var b bytes.Buffer
			if err := Render(&b, format, d, Options{Color: true}); err != nil {
				t.Fatalf("Render(%s) of a decoded document: %v", format, err)
			}
			total += b.Len()
		}
		var b bytes.Buffer
		if err := HTML(&b, []Document{d}, HTMLOptions{}); err != nil {
			t.Fatalf("HTML of a decoded document: %v", err)
		}
		total += b.Len()
		if limit := 1<<20 + 200*len(data); total > limit {
			t.Fatalf("%d bytes of input rendered to %d bytes (more than %d)", len(data), total, limit)
		}
	})
}
