// Package doc is the envelope every result document carries: its kind and
// version, the build that wrote it, when the run started, what it ran
// against and the command line, with secrets masked. It is a leaf: it
// imports only the standard library, version and secret, so every domain
// package (eval, race, load, cluster) and report may import it.
package doc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/version"
)

// Header opens every result document. Domain packages set Kind and
// Version; cmd fills in the rest (Stamp) when it writes the document.
type Header struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Tool is the build that wrote the document; absent in documents
	// upgraded from version 1.
	Tool *Tool `json:"tool,omitempty"`
	// StartedAt is when the run started (wall clock); absent when unknown
	// (documents upgraded from version 1, except load).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Server is what the command ran against; nil (JSON null) for
	// commands that connect to no Redis.
	Server *Server `json:"server"`
	// Command is the command line, program name first, with secrets
	// masked (see secret); absent in documents upgraded from version 1.
	Command []string `json:"command,omitempty"`
}

// DocHeader returns h itself, so that every result embedding a Header
// can be stamped through one interface.
func (h *Header) DocHeader() *Header { return h }

// Tool identifies the build that wrote a document.
type Tool struct {
	Name     string `json:"name"`               // "ratelimit"
	Version  string `json:"version"`            // module version, "(devel)" for a local build
	Revision string `json:"revision,omitempty"` // VCS revision
	Modified bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
}

// ToolOf is the Tool of a build.
func ToolOf(in version.Info) *Tool {
	return &Tool{Name: "ratelimit", Version: in.Version, Revision: in.Revision, Modified: in.Modified}
}

// String reads like "ratelimit v1.2.0 (0123abcd4567)".
func (t Tool) String() string {
	s := t.Name + " " + t.Version
	if t.Revision != "" {
		rev := t.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " (" + rev
		if t.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

// Stamp fills in what the writer of a document knows: the build, the
// start of the run (unless the domain recorded its own) and the command
// line, whose secrets are masked again here so that no caller can forget.
func (h *Header) Stamp(tool *Tool, started time.Time, command []string) {
	h.Tool = tool
	if h.StartedAt.IsZero() {
		h.StartedAt = started
	}
	h.Command = make([]string, len(command))
	for i, w := range command {
		h.Command[i] = secret.Redact(w)
	}
}

// Server identifies what a command ran against (redisconn fills it in).
type Server struct {
	Product   string `json:"product"` // redis, valkey or miniredis
	Version   string `json:"version"` // "" when the ACL user may not run INFO
	Mode      string `json:"mode"`    // standalone, cluster or embedded
	Primaries int    `json:"primaries,omitempty"`
	Addr      string `json:"addr"` // URL with any password masked; "embedded" for miniredis
	Embedded  bool   `json:"embedded"`
}

// MarshalJSON writes the server with Addr masked again, so a Server
// built anywhere never carries a password into a document.
func (s Server) MarshalJSON() ([]byte, error) {
	type plain Server
	p := plain(s)
	p.Addr = secret.URL(p.Addr)
	return json.Marshal(p)
}

// String reads like "redis 7.0.15, cluster with 3 primaries, redis://127.0.0.1:7101".
func (s Server) String() string {
	if s.Embedded {
		return fmt.Sprintf("embedded miniredis %s (in-process; results show the scripts' logic, not a real server's behaviour)", s.Version)
	}
	mode := s.Mode
	if s.Mode == "cluster" {
		mode = fmt.Sprintf("cluster with %d primaries", s.Primaries)
	}
	v := s.Version
	if v == "" {
		v = "(version unknown)"
	}
	return fmt.Sprintf("%s %s, %s, %s", s.Product, v, mode, secret.URL(s.Addr))
}

// Check is one verdict of a run, as every document kind spells it. A run
// passes when every check that is not a warning passes.
type Check struct {
	ID      string `json:"id"`
	Pass    bool   `json:"pass"`
	Message string `json:"message"`
	// Warning marks a check whose failure is reported (a warning in text,
	// a ::warning annotation) but does not fail the run.
	Warning bool `json:"warning,omitempty"`
	// Skipped marks a check that did not apply (Pass is true).
	Skipped bool `json:"skipped,omitempty"`
}

// Counts reports whether c decides the verdict: it is not a warning.
func (c Check) Counts() bool { return !c.Warning }

// Pass reports whether every check that counts passed.
func Pass(checks []Check) bool {
	for _, c := range checks {
		if c.Counts() && !c.Pass {
			return false
		}
	}
	return true
}

// Failures lists the messages of the failed checks that count.
func Failures(checks []Check) []string {
	var out []string
	for _, c := range checks {
		if c.Counts() && !c.Pass {
			out = append(out, c.Message)
		}
	}
	return out
}

// Verdict is "pass" or "fail" for checks.
func Verdict(checks []Check) string {
	if Pass(checks) {
		return "pass"
	}
	return "fail"
}

// The verdicts of a run: pass (no check failed), fail (a check failed),
// and undecided (no check failed, but the run saw too little to decide:
// nothing refused, cut by its budget or time before the evidence existed,
// most requests unanswered). An undecided run exits 1 unless the user
// allows it (--allow-undecided): a CI gate never passes on no evidence.
const (
	VerdictPass      = "pass"
	VerdictFail      = "fail"
	VerdictUndecided = "undecided"
)

// CheckDecided is the id of the check an undecided run fails, so every
// format (text, Markdown, JUnit, annotations) shows the reason as one
// failing row.
const CheckDecided = "decided"

// Undecided is the check an undecided run carries: why it decided
// nothing.
func Undecided(why string) Check {
	return Check{ID: CheckDecided, Pass: false, Message: "undecided: " + why}
}

// VerdictOf is the verdict of checks: fail when a counted check other
// than decided failed, undecided when only decided did, else pass.
func VerdictOf(checks []Check) string {
	undecided := false
	for _, c := range checks {
		if !c.Counts() || c.Pass {
			continue
		}
		if c.ID != CheckDecided {
			return VerdictFail
		}
		undecided = true
	}
	if undecided {
		return VerdictUndecided
	}
	return VerdictPass
}
