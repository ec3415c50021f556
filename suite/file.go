// Package suite owns limiter tests kept as a file (ratelimit.yaml): its
// format and validation (every mistake named by line and field), the
// probe and load command lines each entry stands for, the run of every
// entry (probe, then load) with one verdict per entry and per run, and
// the entries `ratelimit init` writes, each line commented with where its
// value came from. It runs no probe and no load itself: cmd hands Run a
// Runner that does (suite is a domain package and imports no other), and
// each step's document is kept as that command wrote it.
package suite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// DefaultFile is the file check reads and init writes when none is named.
const DefaultFile = "ratelimit.yaml"

// FileVersion is the version of the file format this build reads.
const FileVersion = 1

// MaxEntries bounds the entries of one file.
const MaxEntries = 1000

// Header policies of load (--headers).
var headerModes = []string{"fail", "warn", "off"}

// File is a parsed ratelimit.yaml.
type File struct {
	// Path is where it was read from, for messages.
	Path     string
	Version  int
	Defaults Defaults
	Entries  []Entry
}

// Defaults apply to every entry that does not set the value itself.
type Defaults struct {
	// Rate and Duration are load's arrival rate and length.
	Rate     string
	Duration time.Duration
	// Identities and IdentityHeader are load's API keys (probe uses the
	// header for its own identities).
	Identities     *int
	IdentityHeader string
	// Headers is load's header policy: fail, warn or off.
	Headers string
	// Timeout bounds each request of probe and load.
	Timeout time.Duration
	// AllowUndecided lets an entry that decided nothing pass.
	AllowUndecided bool
}

// Entry is one endpoint's test.
type Entry struct {
	Line   int // where the entry starts in the file
	Name   string
	URL    string // may hold ${VAR}, expanded by Expand
	Method string
	// Headers are sent with every request; values may hold ${VAR}.
	Headers        []Header
	IdentityHeader string
	// Expect is the model, in load --expect syntax ("" means the
	// advertised RateLimit-Policy).
	Expect        string
	LimitedStatus string
	// AllowUndecided: nil means the default's.
	AllowUndecided *bool
	Probe          ProbeSpec
	Load           LoadSpec
	Fault          *FaultSpec

	// lines of the fields, for messages after parsing (Expand)
	urlLine int
}

// Header is one request header of an entry.
type Header struct {
	Name, Value string
	Line        int
}

// ProbeSpec is what probe does for an entry.
type ProbeSpec struct {
	Off bool // run: false
	// Checks, when given, are the only checks run; Skip are not run;
	// WarnOnly only warn.
	Checks, Skip, WarnOnly []string
	Budget                 int
	MaxTime                time.Duration
}

// LoadSpec is what load does for an entry.
type LoadSpec struct {
	Off          bool // run: false
	Rate         string
	Duration     time.Duration
	Identities   *int
	Headers      string
	Thresholds   []string
	ExpectStatus string
}

// FaultSpec is an optional fault played during the entry's load.
type FaultSpec struct {
	Inject        []string
	Redis         string // may hold ${VAR}
	During        string
	RecoverWithin time.Duration
	Key           string
	line          int
}

// Vocabulary is what the file's values are checked against that suite
// does not own: probe's check ids, and the status lists load reads. cmd
// passes them, so the file is refused with the line of the mistake
// before anything runs.
type Vocabulary struct {
	ProbeChecks []string
	Statuses    func(string) error
	// Faults checks a fault spec (load --fault).
	Faults func([]string) error
}

// Error is a mistake in the file: where and which field.
type Error struct {
	Path  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.Path, e.Line, e.Field, e.Msg)
}

// parser walks the YAML nodes, stopping at the first mistake.
type parser struct {
	path  string
	vocab Vocabulary
}

func (p *parser) errf(n *yaml.Node, field, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return exitcode.UsageError(&Error{Path: p.path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// wrap turns a parse error of another package into a file mistake.
func (p *parser) wrap(n *yaml.Node, field string, err error) error {
	return p.errf(n, field, "%s", flagless(err.Error()))
}

// flagless drops a leading "--flag " from a message written for the
// command line ("--expect \"x\": unknown model" reads "\"x\": unknown
// model" here, where the field is named before it).
func flagless(msg string) string {
	if strings.HasPrefix(msg, "--") {
		if _, rest, ok := strings.Cut(msg, " "); ok {
			return rest
		}
	}
	return msg
}

// Parse reads a ratelimit.yaml. Every mistake is exit 2 and names the
// line and the field: an unknown field, a wrong type, a bad model, rate,
// duration or threshold, a check probe does not have, a URL or Redis URL
// with a password or a credential in its query (credentials come from the
// environment: ${VAR}), a credential header with a literal value.
func Parse(path string, data []byte, vocab Vocabulary) (File, error) {
	p := &parser{path: path, vocab: vocab}
	f := File{Path: path}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return f, p.errf(nil, "", "the file is empty; start it with 'ratelimit init URL'")
		}
		return f, exitcode.Usagef("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return f, p.errf(&extra, "", "a second YAML document; keep one per file")
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	err := p.mapping(doc, "", map[string]func(*yaml.Node, string) error{
		"version": func(n *yaml.Node, field string) error {
			v, err := p.int(n, field)
			if err != nil {
				return err
			}
			if v != FileVersion {
				return p.errf(n, field, "version %d is not supported; this ratelimit reads version %d", v, FileVersion)
			}
			f.Version = v
			return nil
		},
		"defaults": func(n *yaml.Node, field string) error { return p.defaults(n, field, &f.Defaults) },
		"entries": func(n *yaml.Node, field string) error {
			if n.Kind != yaml.SequenceNode {
				return p.errf(n, field, "want a list of entries (- name: ..., url: ...)")
			}
			if len(n.Content) > MaxEntries {
				return p.errf(n, field, "%d entries; at most %d", len(n.Content), MaxEntries)
			}
			for i, en := range n.Content {
				e, err := p.entry(en, fmt.Sprintf("%s[%d]", field, i))
				if err != nil {
					return err
				}
				f.Entries = append(f.Entries, e)
			}
			return nil
		},
	})
	if err != nil {
		return f, err
	}
	if f.Version == 0 {
		return f, p.errf(doc, "version", "missing; start the file with 'version: %d'", FileVersion)
	}
	if len(f.Entries) == 0 {
		return f, p.errf(doc, "entries", "no entries; add one with 'ratelimit init URL'")
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		if !e.Load.Off && e.Load.Rate == "" && f.Defaults.Rate == "" {
			return f, p.errf(&yaml.Node{Line: e.Line}, fmt.Sprintf("entries[%d].load.rate", i), "missing: load needs an arrival rate (load.rate, or defaults.rate for every entry), above the limiter's, e.g. 20/s")
		}
		if len(e.Probe.Checks) > 0 {
			// checks: the only ones run, as probe's --skip of the others
			for _, id := range vocab.ProbeChecks {
				if !slices.Contains(e.Probe.Checks, id) {
					e.Probe.Skip = append(e.Probe.Skip, id)
				}
			}
		}
	}
	seen := map[string]int{}
	for i, e := range f.Entries {
		if j, dup := seen[e.Name]; dup {
			return f, p.errf(&yaml.Node{Line: e.Line}, fmt.Sprintf("entries[%d].name", i), "%q is the name of entries[%d] too; names must differ (check --only NAME picks by it)", e.Name, j)
		}
		seen[e.Name] = i
	}
	return f, nil
}

// mapping calls fields[key] for each key of n, refusing unknown keys and
// keys given twice.
func (p *parser) mapping(n *yaml.Node, prefix string, fields map[string]func(*yaml.Node, string) error) error {
	if n.Kind != yaml.MappingNode {
		what := prefix
		if what == "" {
			what = "the file"
		}
		return p.errf(n, prefix, "want a mapping of fields (name: value) in %s", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := k.Value
		if prefix != "" {
			field = prefix + "." + k.Value
		}
		set, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			slices.Sort(known)
			return p.errf(k, field, "unknown field; known here: %s", strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return p.errf(k, field, "given twice")
		}
		seen[k.Value] = true
		if err := set(v, field); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) scalar(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, field, "want a single value")
	}
	return strings.TrimSpace(n.Value), nil
}

func (p *parser) str(dst *string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, field string) error {
		s, err := p.scalar(n, field)
		*dst = s
		return err
	}
}

func (p *parser) int(n *yaml.Node, field string) (int, error) {
	s, err := p.scalar(n, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, p.errf(n, field, "%q: want a whole number, 0 or more", s)
	}
	return v, nil
}

func (p *parser) intPtr(dst **int) func(*yaml.Node, string) error {
	return func(n *yaml.Node, field string) error {
		v, err := p.int(n, field)
		*dst = &v
		return err
	}
}

func (p *parser) bool(n *yaml.Node, field string) (bool, error) {
	s, err := p.scalar(n, field)
	if err != nil {
		return false, err
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.errf(n, field, "%q: want true or false", s)
}

func (p *parser) duration(dst *time.Duration) func(*yaml.Node, string) error {
	return func(n *yaml.Node, field string) error {
		s, err := p.scalar(n, field)
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return p.errf(n, field, "%q: want a positive duration such as 10s or 1m", s)
		}
		*dst = d
		return nil
	}
}

func (p *parser) list(n *yaml.Node, field string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		// one value, or a comma-separated list as on the command line
		var out []string
		for s := range strings.SplitSeq(n.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "want a list ([a, b] or one '- item' a line)")
	}
	var out []string
	for i, c := range n.Content {
		s, err := p.scalar(c, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) rate(n *yaml.Node, field string, dst *string) error {
	s, err := p.scalar(n, field)
	if err != nil {
		return err
	}
	r, err := rate.Parse(s)
	if err != nil || r.IsZero() {
		return p.errf(n, field, "%q: want an arrival rate such as 20/s, 300/m or 5/100ms", s)
	}
	*dst = s
	return nil
}

func (p *parser) headerMode(n *yaml.Node, field string, dst *string) error {
	s, err := p.scalar(n, field)
	if err != nil {
		return err
	}
	if !slices.Contains(headerModes, strings.ToLower(s)) {
		return p.errf(n, field, "%q: want fail, warn or off", s)
	}
	*dst = strings.ToLower(s)
	return nil
}

func (p *parser) defaults(n *yaml.Node, prefix string, d *Defaults) error {
	return p.mapping(n, prefix, map[string]func(*yaml.Node, string) error{
		"rate":            func(n *yaml.Node, f string) error { return p.rate(n, f, &d.Rate) },
		"duration":        p.duration(&d.Duration),
		"identities":      p.intPtr(&d.Identities),
		"identity_header": p.str(&d.IdentityHeader),
		"headers":         func(n *yaml.Node, f string) error { return p.headerMode(n, f, &d.Headers) },
		"timeout":         p.duration(&d.Timeout),
		"allow_undecided": func(n *yaml.Node, f string) (err error) {
			d.AllowUndecided, err = p.bool(n, f)
			return err
		},
	})
}

// namePattern is what an entry's name may be: it names JUnit suites,
// --only and the document, so no spaces or punctuation beyond - _ . /
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-/]{0,63}$`)

// envRef is a ${NAME} reference to the environment.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (p *parser) entry(n *yaml.Node, prefix string) (Entry, error) {
	e := Entry{Line: n.Line}
	err := p.mapping(n, prefix, map[string]func(*yaml.Node, string) error{
		"name": p.str(&e.Name),
		"url": func(n *yaml.Node, f string) error {
			s, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			e.URL, e.urlLine = s, n.Line
			return p.checkURL(n, f, s, "http", "https")
		},
		"method":          p.str(&e.Method),
		"identity_header": p.str(&e.IdentityHeader),
		"expect": func(n *yaml.Node, f string) error {
			s, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			if _, err := judge.ParseExpect(s); err != nil {
				return p.wrap(n, f, err)
			}
			e.Expect = s
			return nil
		},
		"limited_status": func(n *yaml.Node, f string) error {
			s, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			if p.vocab.Statuses != nil {
				if err := p.vocab.Statuses(s); err != nil {
					return p.errf(n, f, "%q: want statuses such as 503 or 503,403", s)
				}
			}
			e.LimitedStatus = s
			return nil
		},
		"allow_undecided": func(n *yaml.Node, f string) error {
			v, err := p.bool(n, f)
			e.AllowUndecided = &v
			return err
		},
		"headers": func(n *yaml.Node, f string) error { return p.headers(n, f, &e) },
		"probe":   func(n *yaml.Node, f string) error { return p.probe(n, f, &e.Probe) },
		"load":    func(n *yaml.Node, f string) error { return p.load(n, f, &e.Load) },
		"fault": func(n *yaml.Node, f string) error {
			e.Fault = &FaultSpec{line: n.Line}
			return p.fault(n, f, e.Fault)
		},
	})
	if err != nil {
		return e, err
	}
	if e.Name == "" {
		return e, p.errf(n, prefix+".name", "missing; every entry has a name (check --only NAME picks by it)")
	}
	if !namePattern.MatchString(e.Name) {
		return e, p.errf(n, prefix+".name", "%q: use letters, digits, - _ . and /, at most 64", e.Name)
	}
	if e.URL == "" {
		return e, p.errf(n, prefix+".url", "missing; the endpoint to test, e.g. https://api.example.test/v1/items")
	}
	if e.Probe.Off && e.Load.Off {
		return e, p.errf(n, prefix, "probe and load both have run: false; the entry would test nothing")
	}
	if e.Fault != nil && e.Load.Off {
		return e, p.errf(n, prefix+".fault", "a fault is played during the load, which has run: false")
	}
	if e.Fault != nil && (e.Expect == "" || strings.EqualFold(e.Expect, "auto") || strings.EqualFold(e.Expect, "none")) {
		return e, p.errf(n, prefix+".fault", "a fault is judged against the model: give expect: MODEL")
	}
	return e, nil
}

// checkURL refuses a URL the tool cannot use and one that carries a
// credential: a password, or a credential in its query.
func (p *parser) checkURL(n *yaml.Node, field, raw string, schemes ...string) error {
	probe := envRef.ReplaceAllString(raw, "x")
	u, err := url.Parse(probe)
	if err != nil || u.Host == "" || !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		return p.errf(n, field, "%q: want a %s:// URL", secret.URL(raw), strings.Join(schemes, ":// or "))
	}
	if u.User != nil {
		if _, has := u.User.Password(); has && !envRef.MatchString(raw[:strings.LastIndexByte(raw, '@')]) {
			return p.errf(n, field, "%s holds a password: keep credentials out of the file; put the password in an environment variable and write ${VAR} in its place", secret.URL(raw))
		}
	}
	for k, vs := range u.Query() {
		if secret.IsCredentialParam(k) {
			for _, v := range vs {
				if v != "x" { // "x" stands for a ${VAR}
					return p.errf(n, field, "%s carries a credential in %s=: put it in an environment variable and write %s=${VAR}", secret.URL(raw), k, k)
				}
			}
		}
	}
	return nil
}

// credentialHeaders carry a credential: their value must come from the
// environment.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	return n == "authorization" || n == "proxy-authorization" || n == "cookie" || secret.IsCredentialParam(n) ||
		strings.Contains(n, "token") || strings.Contains(n, "secret") || strings.HasSuffix(n, "api-key") || strings.HasSuffix(n, "apikey")
}

func (p *parser) headers(n *yaml.Node, prefix string, e *Entry) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, prefix, "want a mapping of header names to values (Authorization: Bearer ${API_TOKEN})")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := prefix + "." + k.Value
		val, err := p.scalar(v, field)
		if err != nil {
			return err
		}
		name := strings.TrimSpace(k.Value)
		if name == "" || strings.ContainsAny(name, " :\t\r\n") {
			return p.errf(k, field, "%q is not a header name", name)
		}
		if strings.ContainsAny(val, "\r\n") {
			return p.errf(v, field, "a header value holds a line break")
		}
		if credentialHeader(name) && !envRef.MatchString(val) {
			return p.errf(v, field, "%s carries a credential: keep it out of the file; put it in an environment variable and write ${VAR} (e.g. %s: Bearer ${API_TOKEN})", name, name)
		}
		for _, h := range e.Headers {
			if strings.EqualFold(h.Name, name) {
				return p.errf(k, field, "given twice")
			}
		}
		e.Headers = append(e.Headers, Header{Name: name, Value: val, Line: v.Line})
	}
	return nil
}

func (p *parser) checkIDs(n *yaml.Node, field string, ids []string) error {
	if p.vocab.ProbeChecks == nil {
		return nil
	}
	for _, id := range ids {
		if !slices.Contains(p.vocab.ProbeChecks, id) {
			return p.errf(n, field, "%q is not a probe check; probe has %s", id, strings.Join(p.vocab.ProbeChecks, ", "))
		}
	}
	return nil
}

func (p *parser) probe(n *yaml.Node, prefix string, s *ProbeSpec) error {
	ids := func(dst *[]string) func(*yaml.Node, string) error {
		return func(n *yaml.Node, f string) error {
			v, err := p.list(n, f)
			if err != nil {
				return err
			}
			*dst = v
			return p.checkIDs(n, f, v)
		}
	}
	err := p.mapping(n, prefix, map[string]func(*yaml.Node, string) error{
		"run": func(n *yaml.Node, f string) error {
			on, err := p.bool(n, f)
			s.Off = !on
			return err
		},
		"checks":    ids(&s.Checks),
		"skip":      ids(&s.Skip),
		"warn_only": ids(&s.WarnOnly),
		"budget": func(n *yaml.Node, f string) (err error) {
			s.Budget, err = p.int(n, f)
			return err
		},
		"max_time": p.duration(&s.MaxTime),
	})
	if err == nil && len(s.Checks) > 0 && len(s.Skip) > 0 {
		return p.errf(n, prefix, "give checks (the only ones run) or skip, not both")
	}
	return err
}

func (p *parser) load(n *yaml.Node, prefix string, s *LoadSpec) error {
	return p.mapping(n, prefix, map[string]func(*yaml.Node, string) error{
		"run": func(n *yaml.Node, f string) error {
			on, err := p.bool(n, f)
			s.Off = !on
			return err
		},
		"rate":       func(n *yaml.Node, f string) error { return p.rate(n, f, &s.Rate) },
		"duration":   p.duration(&s.Duration),
		"identities": p.intPtr(&s.Identities),
		"headers":    func(n *yaml.Node, f string) error { return p.headerMode(n, f, &s.Headers) },
		"thresholds": func(n *yaml.Node, f string) error {
			v, err := p.list(n, f)
			if err != nil {
				return err
			}
			for _, t := range v {
				if _, err := judge.ParseThreshold(t); err != nil {
					return p.wrap(n, f, err)
				}
			}
			s.Thresholds = v
			return nil
		},
		"expect_status": func(n *yaml.Node, f string) error {
			v, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			if p.vocab.Statuses != nil {
				if err := p.vocab.Statuses(v); err != nil {
					return p.errf(n, f, "%q: want statuses such as 200,429 or 2xx,429", v)
				}
			}
			s.ExpectStatus = v
			return nil
		},
	})
}

func (p *parser) fault(n *yaml.Node, prefix string, s *FaultSpec) error {
	err := p.mapping(n, prefix, map[string]func(*yaml.Node, string) error{
		"inject": func(n *yaml.Node, f string) error {
			v, err := p.list(n, f)
			if err != nil {
				return err
			}
			if p.vocab.Faults != nil {
				if err := p.vocab.Faults(v); err != nil {
					return p.wrap(n, f, err)
				}
			}
			s.Inject = v
			return nil
		},
		"redis": func(n *yaml.Node, f string) error {
			v, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			s.Redis = v
			return p.checkURL(n, f, v, "redis", "rediss", "valkey", "valkeys")
		},
		"during": func(n *yaml.Node, f string) error {
			v, err := p.scalar(n, f)
			if err != nil {
				return err
			}
			if !slices.Contains([]string{"open", "closed", "unaffected", "any"}, strings.ToLower(v)) {
				return p.errf(n, f, "%q: want open, closed, unaffected or any", v)
			}
			s.During = strings.ToLower(v)
			return nil
		},
		"recover_within": p.duration(&s.RecoverWithin),
		"key":            p.str(&s.Key),
	})
	if err != nil {
		return err
	}
	if len(s.Inject) == 0 || s.Redis == "" {
		return p.errf(n, prefix, "a fault needs inject (e.g. [pause:2s@3s]) and redis (the Redis behind the target)")
	}
	return nil
}

// Select keeps the entries named in only (all when only is empty); a
// name no entry has is exit 2.
func (f File) Select(only []string) ([]Entry, error) {
	if len(only) == 0 {
		return f.Entries, nil
	}
	var out []Entry
	for _, name := range only {
		i := slices.IndexFunc(f.Entries, func(e Entry) bool { return e.Name == name })
		if i < 0 {
			names := make([]string, len(f.Entries))
			for k, e := range f.Entries {
				names[k] = e.Name
			}
			return nil, exitcode.Usagef("--only %s: %s has no such entry; it has %s", name, f.Path, strings.Join(names, ", "))
		}
		if !slices.ContainsFunc(out, func(e Entry) bool { return e.Name == name }) {
			out = append(out, f.Entries[i])
		}
	}
	// keep the file's order
	slices.SortStableFunc(out, func(a, b Entry) int { return a.Line - b.Line })
	return out, nil
}

// Expand replaces each ${VAR} of the entry's URL, header values and fault
// Redis URL with the variable's value (getenv): credentials come from the
// environment. An unset or empty variable is exit 2, naming it and the
// line.
func (e Entry) Expand(path string, getenv func(string) string) (Entry, error) {
	var err error
	expand := func(s string, line int, field string) string {
		if err != nil {
			return s
		}
		return envRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			v := getenv(name)
			if v == "" && err == nil {
				err = exitcode.UsageError(&Error{Path: path, Line: line, Field: field,
					Msg: fmt.Sprintf("${%s} is not set; export %s (in CI: from a secret) before 'ratelimit check'", name, name)})
			}
			return v
		})
	}
	out := e
	out.URL = expand(e.URL, e.urlLine, "url")
	out.Headers = make([]Header, len(e.Headers))
	for i, h := range e.Headers {
		out.Headers[i] = h
		out.Headers[i].Value = expand(h.Value, h.Line, "headers."+h.Name)
	}
	if e.Fault != nil {
		fs := *e.Fault
		fs.Redis = expand(fs.Redis, fs.line, "fault.redis")
		out.Fault = &fs
	}
	return out, err
}

// EnvVars lists the ${VAR}s the file reads, sorted, each once.
func (f File) EnvVars() []string {
	var out []string
	add := func(s string) {
		for _, m := range envRef.FindAllStringSubmatch(s, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	for _, e := range f.Entries {
		add(e.URL)
		for _, h := range e.Headers {
			add(h.Value)
		}
		if e.Fault != nil {
			add(e.Fault.Redis)
		}
	}
	slices.Sort(out)
	return out
}
