package recording

import (
	"compress/gzip"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/hostile"
)

// pipe streams what write writes into a reader, so neither side holds it.
func pipe(t *testing.T, write func(io.Writer) error) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	t.Cleanup(func() { pr.Close() })
	return pr
}

// TestRecordingInflateCeilings (issue 26): a gzip member that inflates to
// 20 GiB of blank lines ran on past two minutes. Now what a recording may
// inflate to (MaxInflateRatio past inflateGrace, MaxInflated) and how many
// blank lines it may hold (MaxBlankLines) are ceilings: each bomb is
// refused within seconds (exit 2, naming the ceiling), having inflated
// little of it.
func TestRecordingInflateCeilings(t *testing.T) {
	for _, c := range []struct {
		name, source, line, want string
	}{
		{"k6 blank lines", SourceK6, "\n", "blank lines"},
		{"vegeta json blank lines", SourceVegeta, "\r\n", "empty"},
		{"k6 lines of another metric", SourceK6, `{"metric":"vus","type":"Point","data":{"time":"2026-12-02T12:00:00Z","value":1}}` + "\n", "decompression bomb"},
		{"vegeta csv", SourceVegeta, "1780000000000000000,200,5,0,0,,,,0,GET,http://x/,\n", "decompression bomb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := pipe(t, func(w io.Writer) error { return hostile.WriteGzipBomb(w, 20<<30, c.line) })
			start := time.Now()
			_, err := Read(in, RecordOptions{Source: c.source, Name: "bomb.gz"})
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("refusing the bomb took %s, want seconds", took)
			}
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bomb.gz: ") {
				t.Errorf("Read(20 GiB of %q, gzipped) = %v (exit %d), want exit 2 naming %q", c.line, err, exitcode.Code(err), c.want)
			}
		})
	}
	// a plain file of nothing but newlines: the blank lines' ceiling
	in := io.LimitReader(strings.NewReader(strings.Repeat("\n", 2*MaxBlankLines)), 2*MaxBlankLines)
	if _, err := Read(in, RecordOptions{Source: SourceK6, Name: "nl"}); err == nil || !strings.Contains(err.Error(), "blank lines") {
		t.Errorf("Read(%d newlines) = %v, want the blank lines' ceiling", 2*MaxBlankLines, err)
	}
}

// TestVegetaGobBodySkipped (issue 26): one vegeta result whose body holds
// 900 MB took 2.1 GiB: encoding/gob reads a message whole before it
// decodes any field. Now a message longer than maxGobMessage is rewritten
// on its way to gob without its body, so reading a 256 MiB body allocates
// a few MiB, and the run reads as the same run with a small body.
func TestVegetaGobBodySkipped(t *testing.T) {
	const body = 256 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Read(pipe(t, func(w io.Writer) error { return hostile.WriteVegetaGob(w, 20, body) }), RecordOptions{Source: SourceVegeta, Name: "big.bin"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Read(a result with a %d MiB body) = %v", body>>20, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Errorf("reading it allocated %d MiB: the body was kept", grew>>20)
	}
	small, err := Read(pipe(t, func(w io.Writer) error { return hostile.WriteVegetaGob(w, 20, 10) }), RecordOptions{Source: SourceVegeta, Name: "small.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 20 || res.Allowed != small.Allowed || res.BytesIn != small.BytesIn-10+body || res.Verdict != small.Verdict {
		t.Errorf("with the big body: sent %d, allowed %d, bytes in %d, %s; with a small one: allowed %d, bytes in %d, %s",
			res.Sent, res.Allowed, res.BytesIn, res.Verdict, small.Allowed, small.BytesIn, small.Verdict)
	}
	// a field other than the body may not be long either
	_, err = Read(pipe(t, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if err := hostile.WriteVegetaGob(zw, 2, 10); err != nil {
			return err
		}
		return zw.Close()
	}), RecordOptions{Source: SourceVegeta, Name: "gz.bin"})
	if err != nil {
		t.Errorf("a gzipped gob: %v", err)
	}
}
