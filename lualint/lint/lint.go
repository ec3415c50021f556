// Package lint holds what the Lua key lint (package lualint) reports about a
// script: its findings and notes. It imports only the standard library, so
// cluster keeps the reports in its keyslot document and report draws them
// without depending on the Lua parser.
package lint

import (
	"fmt"
	"strings"
)

// Finding is a key argument of redis.call or redis.pcall that does not come
// from KEYS[...]: Redis Cluster cannot route it, and scripts with a shebang
// flag line and functions refuse undeclared keys. A script that cannot be
// read gives one finding with Arg 0.
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Column is the byte column (from 1) where Expr starts; 0 when unknown.
	Column  int    `json:"column,omitempty"`
	Call    string `json:"call"`
	Command string `json:"command"`
	Arg     int    `json:"arg"`
	Expr    string `json:"expr"`
	Reason  string `json:"reason"`
	// Via is the callee as written when the call goes through an alias
	// (c for local c = redis.call, r.call for local r = redis).
	Via string `json:"via,omitempty"`
	// When is the if branch the call lies in, as the conditions under
	// which it runs ("ARGV[1] == 'x' (line 3)"); empty when the call is
	// in no branch.
	When string `json:"when,omitempty"`
}

// Message is the finding as one line, without the file position.
func (f Finding) Message() string {
	if f.Arg == 0 {
		return f.Reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s ...) argument %d", f.Call, f.Command, f.Arg)
	if f.Via != "" {
		b.WriteString(", called as " + f.Via)
	}
	fmt.Fprintf(&b, ": %s is %s", f.Expr, f.Reason)
	if f.When != "" {
		b.WriteString(", used only when " + f.When)
	}
	b.WriteString("; pass the key in KEYS and use KEYS[i]")
	return b.String()
}

// Note says that a key taken from KEYS is used only in some branches of
// the script's ifs: one run of the script does not necessarily use it
// together with the others.
type Note struct {
	Line   int    `json:"line"`             // the first use
	Column int    `json:"column,omitempty"` // byte column of the first use, from 1
	Key    string `json:"key"`              // KEYS[2]; KEYS for unpack(KEYS) and ipairs(KEYS)
	When   string `json:"when"`             // the branches, as in Finding.When, joined with ", or when "
}

// Message is the note as one line, without the file position.
func (n Note) Message() string { return n.Key + " is used only when " + n.When }

// ScriptReport is the lint result for one script.
type ScriptReport struct {
	File     string    `json:"file"`
	Calls    int       `json:"calls"`
	Findings []Finding `json:"findings"`
	// Notes are about keys used only in some branches; they do not fail
	// the script.
	Notes []Note `json:"notes,omitempty"`
}
