// Package version tells which build of ratelimit is running: the module
// version and the VCS revision the Go toolchain stamped into the binary.
// It is a leaf package, so every result document may carry it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info identifies a build.
type Info struct {
	Module    string `json:"module"`             // module path
	Version   string `json:"version"`            // module version, "(devel)" for a local build
	Revision  string `json:"revision,omitempty"` // VCS revision
	Time      string `json:"time,omitempty"`     // VCS commit time, RFC 3339
	Modified  bool   `json:"modified,omitempty"` // the work tree had uncommitted changes
	GoVersion string `json:"go_version"`
}

// Override, when set at link time (-ldflags "-X
// github.com/ratelimit-dev/ratelimit/version.Override=v1.2.3", as the
// release build and the Dockerfile do), is the version reported instead
// of the module version the toolchain stamped.
var Override string

// Get reads the running binary's build information.
func Get() Info {
	in := from(debug.ReadBuildInfo())
	if v := Override; v != "" {
		if v[0] >= '0' && v[0] <= '9' {
			v = "v" + v // GoReleaser's {{ .Version }} has no v
		}
		in.Version = v
	}
	return in
}

func from(bi *debug.BuildInfo, ok bool) Info {
	in := Info{Module: "github.com/ratelimit-dev/ratelimit", Version: "(devel)", GoVersion: runtime.Version()}
	if !ok || bi == nil {
		return in
	}
	if bi.Main.Path != "" {
		in.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		in.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String reads like "ratelimit v1.2.0 (revision 0123abcd, 2026-12-02T18:00:00Z, modified) go1.26.8".
func (in Info) String() string {
	s := "ratelimit " + in.Version
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (revision " + rev
		if in.Time != "" {
			s += ", " + in.Time
		}
		if in.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s", s, in.GoVersion)
}
