package cluster

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/lualint/lint"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Kind and Version identify the keyslot result document.
const (
	Kind    = "keyslot"
	Version = 2
)

// Options say what to compute. Every part is optional; Run does those given.
type Options struct {
	Keys     []string // keys to place
	SameSlot bool     // the keys form one group that must share a slot
	Groups   []Group  // groups read by ReadGroups (keys, file and line set)
	// Scripts are the reports of the scripts linted (lualint.Lint): Run
	// turns each into a check and gathers their findings.
	Scripts []lint.ScriptReport
	// Template with From and To: how a key scheme spreads.
	Template *Template
	From, To uint64
	// SplitKey into Into sub-keys, each with 1/Into of Rate (optional).
	SplitKey string
	Into     int
	Rate     rate.Rate
	// Topology, when set, is the cluster's slot map: keys, the spread and
	// the split are placed on its nodes. ServerSlots, when set, are the
	// server's CLUSTER KEYSLOT answers, one per key of Keys, which the
	// offline slots are verified against. Package live reads both from a
	// server.
	Topology    *Topology
	ServerSlots []int
}

// Key is one key's placement.
type Key struct {
	Key string `json:"key"`
	// KeyBase64 holds the exact bytes when the key is not valid UTF-8
	// (JSON strings cannot carry such bytes).
	KeyBase64  string   `json:"key_base64,omitempty"`
	Tag        string   `json:"tag"`
	Tagged     bool     `json:"tagged"`
	Slot       int      `json:"slot"`
	Node       string   `json:"node,omitempty"`
	Replicas   []string `json:"replicas,omitempty"`
	ServerSlot *int     `json:"server_slot,omitempty"`
}

// Verify is the outcome of comparing offline slots with CLUSTER KEYSLOT.
type Verify struct {
	Checked    int `json:"checked"`
	Mismatches int `json:"mismatches"`
}

// Result is the keyslot document.
type Result struct {
	doc.Header
	// Notice says why node placement is missing (not a cluster).
	Notice   string              `json:"notice,omitempty"`
	Topology *Topology           `json:"topology,omitempty"`
	Keys     []Key               `json:"keys"`
	Groups   []Group             `json:"groups"`
	Scripts  []lint.ScriptReport `json:"scripts"`
	Findings []lint.Finding      `json:"findings"`
	Verify   *Verify             `json:"verify,omitempty"`
	Spread   *Spread             `json:"spread,omitempty"`
	Split    *Split              `json:"split,omitempty"`
	// Checks holds one check per group (CROSSSLOT), per linted script and
	// for --verify, in that order (see Checks).
	Checks  []doc.Check `json:"checks"`
	Verdict string      `json:"verdict"`
}

// CheckList is Checks, or the checks derived from the groups, scripts and
// verify when the Result has none.
func (r Result) CheckList() []doc.Check {
	if r.Checks != nil {
		return r.Checks
	}
	return Checks(r)
}

// Pass reports whether every check passed.
func (r Result) Pass() bool { return doc.Pass(r.CheckList()) }

// Checks returns the checks of a result: each group shares a slot, each
// script takes its keys from KEYS, and CLUSTER KEYSLOT agrees with the
// offline slots (only when --verify ran).
func Checks(r Result) []doc.Check {
	out := []doc.Check{}
	for i, g := range r.Groups {
		c := doc.Check{ID: fmt.Sprintf("crossslot:%d", i+1), Pass: !g.Crossslot}
		switch {
		case g.Crossslot:
			c.Message = fmt.Sprintf("CROSSSLOT: keys used together span %d slots %v", len(g.Slots), g.Slots)
		case len(g.Slots) == 1:
			c.Message = fmt.Sprintf("all keys in slot %d", g.Slots[0])
		default:
			c.Message = "no keys"
		}
		out = append(out, c)
	}
	for _, s := range r.Scripts {
		c := doc.Check{ID: "lint:" + s.File, Pass: len(s.Findings) == 0}
		if c.Pass {
			c.Message = count(s.Calls, "redis call", "redis calls") + ", every key from KEYS"
		} else {
			c.Message = fmt.Sprintf("%s not from KEYS (first at line %d)", count(len(s.Findings), "key argument", "key arguments"), s.Findings[0].Line)
		}
		out = append(out, c)
	}
	if v := r.Verify; v != nil {
		c := doc.Check{ID: "verify", Pass: v.Mismatches == 0, Message: fmt.Sprintf("CLUSTER KEYSLOT agrees for %d keys", v.Checked)}
		if !c.Pass {
			c.Message = fmt.Sprintf("%d of %d keys differ", v.Mismatches, v.Checked)
		}
		out = append(out, c)
	}
	return out
}

// Reasons sums up why a result failed, one line per part that failed
// (verify, groups, scripts); empty on pass.
func (r Result) Reasons() []string {
	out := []string{}
	if v := r.Verify; v != nil && v.Mismatches > 0 {
		out = append(out, fmt.Sprintf("%d of %d keys: CLUSTER KEYSLOT differs from the offline slot", v.Mismatches, v.Checked))
	}
	cross := 0
	for _, g := range r.Groups {
		if g.Crossslot {
			cross++
		}
	}
	if cross > 0 {
		verb := "span"
		if cross == 1 {
			verb = "spans"
		}
		out = append(out, fmt.Sprintf("%d of %s %s slots (CROSSSLOT)", cross, count(len(r.Groups), "group", "groups"), verb))
	}
	if n := len(r.Findings); n > 0 {
		verb := "do"
		if n == 1 {
			verb = "does"
		}
		out = append(out, fmt.Sprintf("%s in %s %s not come from KEYS", count(n, "key argument", "key arguments"), count(len(r.Scripts), "script", "scripts"), verb))
	}
	return out
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Run computes everything opts asks for, offline: it reads no server, and
// places keys on nodes only when opts carry a Topology (package live runs
// it with what a server said).
func Run(ctx context.Context, opts Options) (Result, error) {
	res := Result{Header: doc.Header{Kind: Kind, Version: Version}, Topology: opts.Topology,
		Keys: make([]Key, len(opts.Keys)), Groups: []Group{}, Scripts: []lint.ScriptReport{},
		Findings: []lint.Finding{}}
	top := opts.Topology
	for i, k := range opts.Keys {
		if i%spreadCheckEvery == spreadCheckEvery-1 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		tag, ok := Tag(k)
		kk := Key{Key: k, Tag: tag, Tagged: ok, Slot: Slot(k)}
		if !utf8.ValidString(k) {
			kk.KeyBase64 = base64.StdEncoding.EncodeToString([]byte(k))
		}
		if sh := top.Owner(kk.Slot); sh != nil {
			kk.Node, kk.Replicas = sh.Primary, sh.Replicas
		}
		res.Keys[i] = kk
	}
	if got := opts.ServerSlots; len(got) > 0 {
		if len(got) != len(opts.Keys) {
			return Result{}, fmt.Errorf("%d server slots for %d keys", len(got), len(opts.Keys))
		}
		res.Verify = &Verify{Checked: len(got)}
		for i := range got {
			slot := got[i]
			res.Keys[i].ServerSlot = &slot
			if slot != res.Keys[i].Slot {
				res.Verify.Mismatches++
			}
		}
	}
	if opts.SameSlot {
		res.Groups = append(res.Groups, CheckGroup(opts.Keys))
	}
	for _, g := range opts.Groups {
		c := CheckGroup(g.Keys)
		c.File, c.Line = g.File, g.Line
		res.Groups = append(res.Groups, c)
	}
	for _, rep := range opts.Scripts {
		res.Scripts = append(res.Scripts, rep)
		res.Findings = append(res.Findings, rep.Findings...)
	}
	if opts.Template != nil {
		sp, err := SpreadOfContext(ctx, *opts.Template, opts.From, opts.To, top)
		if err != nil {
			return Result{}, fmt.Errorf("spread of %s over %d-%d: %w", opts.Template, opts.From, opts.To, err)
		}
		res.Spread = &sp
	}
	if opts.Into != 0 || opts.SplitKey != "" {
		sp, err := ProposeSplit(opts.SplitKey, opts.Into, top)
		if err != nil {
			return Result{}, err
		}
		sp.SetRate(opts.Rate)
		res.Split = &sp
	}
	res.Checks = Checks(res)
	res.Verdict = doc.Verdict(res.Checks)
	return res, nil
}

// Limits of the key and groups files (-f, --groups), which are streamed
// line by line: a line longer than MaxLine (a /dev/zero, a file without
// newlines) is refused when it reaches the limit, never buffered whole.
const (
	MaxLine = 1 << 20   // bytes in one line (1 MiB)
	MaxKeys = 1_000_000 // keys in a key file, and keys in all groups of a groups file
)

// newLineScanner scans r line by line (a trailing "\r" dropped, for CRLF
// files), refusing a line longer than MaxLine.
func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLine+2) // room for "\r\n"
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if len(tok) > MaxLine {
			return 0, nil, bufio.ErrTooLong
		}
		return adv, tok, err
	})
	return sc
}

// scanError names the line a scan stopped at.
func scanError(err error, file string, line int) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: line longer than %d MiB; write one key per line (is this a key list?)", file, line, MaxLine>>20)
	}
	return fmt.Errorf("%s:%d: %w", file, line, err)
}

// skipLine reports whether a line holds no key: blank (only white space)
// or a comment, whose first non-blank character is #.
func skipLine(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || t[0] == '#'
}

// ReadKeys reads one key per line from the file named file (for errors).
// A trailing "\r" is dropped (CRLF files); blank lines and lines whose
// first non-blank character is # are skipped; every other byte of a line
// belongs to the key (leading and trailing spaces too). A key that starts
// with # can be given as an argument, or quoted in a --groups file. Lines
// may be at most MaxLine bytes and the file may hold at most MaxKeys keys.
func ReadKeys(r io.Reader, file string) ([]string, error) {
	sc := newLineScanner(r)
	var keys []string
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if skipLine(s) {
			continue
		}
		if len(keys) == MaxKeys {
			return nil, fmt.Errorf("%s:%d: more than %d keys; check them in parts", file, line, MaxKeys)
		}
		keys = append(keys, s)
	}
	if err := sc.Err(); err != nil {
		return nil, scanError(err, file, line+1)
	}
	return keys, nil
}

// ReadGroups reads one group per line: keys separated by spaces, quoted
// the way redis-cli reads them ("a b", 'x', "\xff") so keys may hold any
// byte. Blank lines and lines starting with # are skipped. Lines may be at
// most MaxLine bytes and all groups together may hold at most MaxKeys keys.
func ReadGroups(r io.Reader, file string) ([]Group, error) {
	sc := newLineScanner(r)
	var groups []Group
	line, total := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if skipLine(text) {
			continue
		}
		keys, err := SplitArgs(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if total += len(keys); total > MaxKeys {
			return nil, fmt.Errorf("%s:%d: more than %d keys in the groups; check them in parts", file, line, MaxKeys)
		}
		groups = append(groups, Group{Keys: keys, File: file, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, scanError(err, file, line+1)
	}
	return groups, nil
}

// MarshalJSON writes the document with its checks (derived when the
// Result has none) and the verdict they make.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Checks = r.CheckList()
	p.Verdict = doc.Verdict(p.Checks)
	return json.Marshal(p)
}
