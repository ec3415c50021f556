package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/ratelimit-dev/ratelimit", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-12-02T18:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	in := from(bi, true)
	if in.Version != "v1.2.0" || in.Revision != "0123456789abcdef0123" || !in.Modified || in.Time != "2026-12-02T18:00:00Z" {
		t.Errorf("from = %+v", in)
	}
	want := "ratelimit v1.2.0 (revision 0123456789ab, 2026-12-02T18:00:00Z, modified) go1.26.8"
	if got := in.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	none := from(nil, false)
	if none.Version != "(devel)" || none.Revision != "" || !strings.HasPrefix(none.String(), "ratelimit (devel) go") {
		t.Errorf("without build info: %+v %q", none, none.String())
	}
}

func TestOverride(t *testing.T) {
	defer func(v string) { Override = v }(Override)
	for in, want := range map[string]string{"1.4.0": "v1.4.0", "v2.0.0-rc.1": "v2.0.0-rc.1"} {
		Override = in
		if got := Get().Version; got != want {
			t.Errorf("Override %q: version %q, want %q", in, got, want)
		}
	}
	Override = ""
	if got := Get().Version; got == "v1.4.0" || got == "" {
		t.Errorf("without Override: version %q", got)
	}
}
