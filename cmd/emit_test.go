package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// TestEveryCommandEmitsOneWay: each command that produces a document
// writes the same one to --out and to -o json (both validated against the
// schema by execute), with its envelope: kind and version 2, the build,
// the factory's clock (or load's own start) and the command line with
// the password masked; report reads every one of them back.
func TestEveryCommandEmitsOneWay(t *testing.T) {
	tg := redistest.Standalone(t)
	target := loadBucketTarget(t)
	dir := t.TempDir()
	redisURL := strings.Replace(tg.URL, "redis://", "redis://default:s3cret@", 1)
	runs := []struct {
		kind string
		args []string
		code int
	}{
		{"eval", []string{"eval", "--redis", "embedded", "rl:{u}:tb", "--capacity", "2", "--rate", "1/s", "-n", "3"}, exitcode.OK},
		{"simulate", []string{"eval", "--redis", "embedded", "--simulate", "--arrivals", "20/s", "--duration", "2s", "--capacity", "10", "--rate", "5/s"}, exitcode.OK},
		{"scripts", []string{"scripts"}, exitcode.OK},
		{"keyslot", []string{"keyslot", "--same-slot", "rl:{u}:a", "rl:u:b"}, exitcode.Failed},
		{"race", []string{"race", "--redis", redisURL, "--trials", "1", "--concurrency", "20", "--strategies", "incr"}, exitcode.OK},
		{"load", []string{"load", "--target", target.URL, "--rate", "10/s", "--duration", "1s", "-H", "Authorization: Bearer t0ken", "--allow-undecided"}, exitcode.OK},
	}
	var files []string
	for _, r := range runs {
		t.Run(r.kind, func(t *testing.T) {
			out := filepath.Join(dir, r.kind+".json")
			files = append(files, out)
			tf := newTestFactory(t)
			args := append(slices.Clone(r.args), "-o", "json", "--out", out)
			if code := tf.execute(t, args...); code != r.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, r.code, tf.ErrOut.String())
			}
			saved, err := os.ReadFile(out)
			if err != nil || string(saved) != tf.Out.String() {
				t.Fatalf("--out differs from -o json (read error %v):\n%s\n---\n%s", err, saved, tf.Out.String())
			}
			var h struct {
				Kind      string `json:"kind"`
				Version   int    `json:"version"`
				Tool      *struct{ Name, Version string }
				StartedAt time.Time `json:"started_at"`
				Command   []string  `json:"command"`
			}
			if err := json.Unmarshal(saved, &h); err != nil {
				t.Fatal(err)
			}
			if h.Kind != r.kind || h.Version != 2 || h.Tool == nil || h.Tool.Name != "ratelimit" {
				t.Errorf("envelope: kind %q version %d tool %+v", h.Kind, h.Version, h.Tool)
			}
			if r.kind != "load" && !h.StartedAt.Equal(testNow) {
				t.Errorf("started_at %v, want the factory's clock %v", h.StartedAt, testNow)
			}
			want := append([]string{"ratelimit"}, args...)
			for i, w := range want {
				w = strings.Replace(w, "s3cret", "xxxxx", 1)
				want[i] = strings.Replace(w, "Bearer t0ken", "xxxxx", 1)
			}
			if strings.Join(h.Command, " ") != strings.Join(want, " ") {
				t.Errorf("command = %q, want %q", h.Command, want)
			}
			if strings.Contains(string(saved), "s3cret") || strings.Contains(string(saved), "t0ken") {
				t.Error("the document carries a secret")
			}
		})
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, append([]string{"report", "-o", "json"}, files...)...); code != exitcode.OK {
		t.Fatalf("report of every kind: exit %d, stderr %q", code, tf.ErrOut.String())
	}
	var docs []map[string]any
	if err := json.Unmarshal(tf.Out.Bytes(), &docs); err != nil || len(docs) != len(runs) {
		t.Fatalf("report -o json: %d documents (%v), want %d", len(docs), err, len(runs))
	}
}

// TestOutCheckedBeforeTheRun: a --out that cannot be written is exit 2
// before anything runs, for every command that takes it; an existing file
// is left as it was.
func TestOutCheckedBeforeTheRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "doc.json")
	for _, args := range [][]string{
		{"eval", "--redis", "embedded", "k", "--capacity", "2", "--rate", "1/s"},
		{"eval", "--redis", "embedded", "--simulate", "--arrivals", "2/s", "--duration", "1s", "--capacity", "1", "--rate", "1/s"},
		{"scripts"},
		{"keyslot", "a"},
		{"race", "--redis", "embedded", "--trials", "1"},
		{"load", "--target", "http://127.0.0.1:1/", "--rate", "1/s", "--duration", "1s"},
	} {
		t.Run(args[0], func(t *testing.T) {
			tf := newTestFactory(t)
			code := tf.execute(t, append(slices.Clone(args), "--out", missing)...)
			if code != exitcode.Usage || tf.Out.Len() != 0 || !strings.Contains(tf.ErrOut.String(), "--out") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing run, a line naming --out", code, tf.Out.String(), tf.ErrOut.String())
			}
		})
	}
	// An existing file is kept when the run fails before the document.
	keep := filepath.Join(t.TempDir(), "keep.json")
	if err := os.WriteFile(keep, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tf := newTestFactory(t)
	if code := tf.execute(t, "eval", "--redis", "embedded", "k", "--capacity", "2", "--rate", "1/s", "--cost", "0", "--out", keep); code != exitcode.Usage {
		t.Fatalf("exit %d, want 2", code)
	}
	if data, _ := os.ReadFile(keep); string(data) != "old" {
		t.Errorf("--out of a refused run holds %q, want it untouched", data)
	}
}

func TestMaskArgs(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"race", "--redis", "redis://ops:pw@h:1"}, []string{"race", "--redis", "redis://ops:xxxxx@h:1"}},
		{[]string{"race", "--redis=redis://:pw@h:1/0"}, []string{"race", "--redis=redis://:xxxxx@h:1/0"}},
		{[]string{"load", "-H", "Authorization: Bearer x", "-H", "Accept: */*"}, []string{"load", "-H", "Authorization: xxxxx", "-H", "Accept: */*"}},
		{[]string{"load", "--header=X-API-Key: k1", "-HCookie: s=1"}, []string{"load", "--header=X-API-Key: xxxxx", "-HCookie: xxxxx"}},
		{[]string{"load", "--body", `{"password":"p"}`, "--body", "@f.json"}, []string{"load", "--body", "xxxxx", "--body", "@f.json"}},
		{[]string{"load", "--target", "http://u:p@h/x?token=t"}, []string{"load", "--target", "http://u:xxxxx@h/x?token=xxxxx"}},
		{[]string{"eval", "--identity", "key-123", "--hash-identity"}, []string{"eval", "--identity", "xxxxx", "--hash-identity"}},
		{[]string{"eval", "--identity", "user42"}, []string{"eval", "--identity", "user42"}},
		{[]string{"eval", "--script", "s.lua", "--", "k", ",", "-H", "Authorization: x"}, []string{"eval", "--script", "s.lua", "--", "k", ",", "-H", "Authorization: x"}},
	}
	for _, tt := range tests {
		if got := maskArgs(tt.in); strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
			t.Errorf("maskArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
