package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files (testdata/*.golden, the renderers'
// outputs) instead of comparing with them: go test ./report -update. It
// never rewrites an input: the documents in testdata/*.json are frozen,
// so a change to a reader or a builder cannot be accepted together with
// the outputs it changes.
var update = flag.Bool("update", false, "rewrite golden files (testdata/*.golden) in testdata")

// golden compares got with testdata/name, or rewrites the file with
// -update. A difference is shown as a line diff with context.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if !strings.HasSuffix(name, ".golden") {
		t.Fatalf("golden(%s): only *.golden outputs are golden files; testdata/*.json are frozen inputs", name)
	}
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run go test ./report -update)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	t.Errorf("%s differs from the golden file (- want, + got; run go test ./report -update if the change is intended):\n%s",
		name, lineDiff(string(want), string(got), 3, 80))
}

// lineDiff returns a unified-style diff of two texts: lines only in a
// prefixed with "-", only in b with "+", and up to context unchanged lines
// around each change; at most maxLines lines of output.
func lineDiff(a, b string, context, maxLines int) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j] is the length of the longest common subsequence of al[i:]
	// and bl[j:]; golden files are small, so the quadratic table is fine.
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		line string
		no   int // line number in a (for ' ' and '-') or b (for '+')
	}
	var ops []op
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i], i + 1})
			i++
			j++
		case i < len(al) && (j == len(bl) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', al[i], i + 1})
			i++
		default:
			ops = append(ops, op{'+', bl[j], j + 1})
			j++
		}
	}
	show := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		for c := max(0, k-context); c <= min(len(ops)-1, k+context); c++ {
			show[c] = true
		}
	}
	var out strings.Builder
	lines, last := 0, -1
	for k, o := range ops {
		if !show[k] {
			continue
		}
		if lines == maxLines {
			out.WriteString("... (diff truncated)\n")
			break
		}
		if last >= 0 && k != last+1 {
			out.WriteString("...\n")
		}
		if o.kind == ' ' {
			fmt.Fprintf(&out, "  %4d  %s\n", o.no, o.line)
		} else {
			fmt.Fprintf(&out, "%c %4d  %q\n", o.kind, o.no, o.line)
		}
		lines++
		last = k
	}
	return out.String()
}

func TestLineDiff(t *testing.T) {
	tests := []struct {
		a, b, want string
	}{
		{"x\ny\nz", "x\ny\nz", ""},
		{"x\ny\nz", "x\nY\nz", "     1  x\n-    2  \"y\"\n+    2  \"Y\"\n     3  z\n"},
		{"a\nb\nc\nd\ne\nf\ng\nh", "a\nb\nc\nd\ne\nf\ng\nh\ni", "     6  f\n     7  g\n     8  h\n+    9  \"i\"\n"},
	}
	for _, tt := range tests {
		if got := lineDiff(tt.a, tt.b, 3, 80); got != tt.want {
			t.Errorf("lineDiff(%q, %q) =\n%s\nwant\n%s", tt.a, tt.b, got, tt.want)
		}
	}
}
