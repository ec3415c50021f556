package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/tally"
)

// FuzzMerge feeds two arbitrary documents through Decode and, when both
// are load documents, through tally.Merge, as ratelimit merge does (issue
// 26): no panic; every refusal is one exit-2 line; a merge that succeeds
// is a document Decode reads back (every array within its own plan's
// bounds); and the merge allocates in proportion to what it read, never
// to the years between two forged starts. Seeded with the two segments of
// one real run (testdata/merge).
func FuzzMerge(f *testing.F) {
	var seg [2][]byte
	for i := range seg {
		b, err := os.ReadFile(filepath.Join("testdata", "merge", []string{"seg0.json", "seg1.json"}[i]))
		if err != nil {
			f.Fatal(err)
		}
		seg[i] = b
	}
	f.Add(seg[0], seg[1])
	f.Add(seg[1], seg[0])
	f.Add(seg[0], seg[0])
	f.Add(seg[0], bytes.Replace(seg[1], []byte(`"started_at": "2026`), []byte(`"started_at": "2027`), 1))
	f.Add(seg[0], bytes.Replace(seg[1], []byte(`"started_at": "2026`), []byte(`"started_at": "2226`), 1))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var docs []*tally.Result
		for _, data := range [][]byte{a, b} {
			d, err := Decode(data)
			if err != nil {
				return
			}
			r, ok := d.Value.(*tally.Result)
			if !ok {
				return
			}
			docs = append(docs, r)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		m, err := tally.Merge(docs)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if grew, limit := after.TotalAlloc-before.TotalAlloc, uint64(64<<20+400*(len(a)+len(b))); grew > limit {
			t.Fatalf("merging %d bytes of documents allocated %d MiB", len(a)+len(b), grew>>20)
		}
		if took > 2*time.Second {
			t.Fatalf("merging %d bytes of documents took %s", len(a)+len(b), took)
		}
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage || strings.ContainsAny(err.Error(), "\n\x1b") {
				t.Fatalf("Merge error %q (exit %d), want one exit-2 line", err, exitcode.Code(err))
			}
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("the merged document does not marshal: %v", err)
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("the merged document does not read back: %v", err)
		}
	})
}
