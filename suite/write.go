package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// Line is one value `ratelimit init` writes, with where it came from (the
// comment at the end of its line).
type Line struct {
	Key, Value, Why string
	// List writes Value's items as a flow list ([a, b]).
	List []string
}

// Draft is the entry `ratelimit init` writes: its top-level lines, then
// the probe and load lines, each with its reason.
type Draft struct {
	Name string
	Top  []Line
	// Headers are the request headers (a mapping after Top).
	Headers     []Line
	Probe, Load []Line
	// Heading is the comment line above the entry.
	Heading string
}

// Text is the entry as YAML, its dash indented by indent spaces, every
// line commented with where its value came from.
func (d Draft) Text(indent int) string {
	pad := strings.Repeat(" ", indent)
	var rows [][2]string // line, comment
	key := func(depth int, first bool, l Line) {
		lead := pad + "  " + strings.Repeat("  ", depth)
		if first {
			lead = pad + "- "
		}
		v := scalar(l.Value)
		if l.List != nil {
			items := make([]string, len(l.List))
			for i, s := range l.List {
				items[i] = scalar(s)
			}
			v = "[" + strings.Join(items, ", ") + "]"
		}
		text := lead + l.Key + ":"
		if v != "" || l.List != nil {
			text += " " + v
		}
		rows = append(rows, [2]string{text, l.Why})
	}
	for i, l := range d.Top {
		key(0, i == 0, l)
	}
	for _, sec := range []struct {
		name  string
		lines []Line
		why   string
	}{
		{"headers", d.Headers, "sent with every request"},
		{"probe", d.Probe, "what 'ratelimit probe' checks"},
		{"load", d.Load, "what 'ratelimit load' sends and judges"},
	} {
		if len(sec.lines) == 0 {
			continue
		}
		key(0, false, Line{Key: sec.name, Why: sec.why})
		for _, l := range sec.lines {
			key(1, false, l)
		}
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	var b strings.Builder
	if d.Heading != "" {
		b.WriteString(pad + "# " + d.Heading + "\n")
	}
	for _, r := range rows {
		b.WriteString(r[0])
		if r[1] != "" {
			b.WriteString(strings.Repeat(" ", width-len(r[0])+2) + "# " + oneLineComment(r[1]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func oneLineComment(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// plainSafe are scalars YAML reads back as the same string unquoted.
var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_./${}=,+%<>!-][A-Za-z0-9_./:${}=,+%<>!@ -]*$`)

// scalar writes s as a YAML scalar: plain when YAML reads it back as the
// same string, else double-quoted (JSON's quoting is YAML's).
func scalar(s string) string {
	if s == "" {
		return ""
	}
	if plainSafe.MatchString(s) && !strings.Contains(s, ": ") && !strings.HasSuffix(s, ":") && !strings.HasSuffix(s, " ") {
		var back any
		if err := yaml.Unmarshal([]byte("v: "+s), &back); err == nil {
			if m, ok := back.(map[string]any); ok && m["v"] == s {
				return s
			}
		}
	}
	q, _ := json.Marshal(s)
	return string(q)
}

// NameFor is an entry name for a URL: its path's segments, else its host,
// made unique among taken by a -2, -3... suffix.
func NameFor(raw string, taken []string) string {
	u, err := url.Parse(raw)
	base := "endpoint"
	if err == nil {
		p := strings.Trim(u.Path, "/")
		switch {
		case p != "":
			base = p
		case u.Hostname() != "":
			base = u.Hostname()
		}
	}
	base = regexp.MustCompile(`[^A-Za-z0-9_./-]+`).ReplaceAllString(base, "-")
	base = strings.Trim(base, "-./")
	if base == "" {
		base = "endpoint"
	}
	if len(base) > 56 {
		base = base[:56]
	}
	name := base
	for i := 2; slices.Contains(taken, name); i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

// Header of a file init creates.
const fileHead = `# Limiter tests for 'ratelimit check' (the format: docs/schema/ratelimit-file.json).
# Credentials come from the environment: write ${VAR}, never the value.
version: 1  # the file format
entries:  # one per endpoint; 'ratelimit init URL' adds one
`

// Append adds d to the file whose content is existing (nil: a new file)
// and returns the new content, which Parse accepts. The entries list must
// be the file's last top-level field, in block style (- name: ...), as
// init writes it; otherwise the entry is for the user to paste (exit 2).
func Append(path string, existing []byte, d Draft, vocab Vocabulary) ([]byte, error) {
	if len(bytes.TrimSpace(existing)) == 0 {
		out := []byte(fileHead + d.Text(2))
		if _, err := Parse(path, out, vocab); err != nil {
			// the user's values (the URL, -H) that check would refuse
			var fe *Error
			if errors.As(err, &fe) {
				return nil, exitcode.Usagef("%s: %s", strings.TrimPrefix(fe.Field, "entries[0]."), fe.Msg)
			}
			return nil, err
		}
		return out, nil
	}
	f, err := Parse(path, existing, vocab)
	if err != nil {
		return nil, err
	}
	for _, e := range f.Entries {
		if e.Name == d.Name {
			return nil, exitcode.Usagef("%s:%d: an entry named %s exists; give init --name NAME", path, e.Line, d.Name)
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(existing, &root); err != nil {
		return nil, exitcode.Usagef("%s: %v", path, err)
	}
	m := root.Content[0]
	last := m.Content[len(m.Content)-2]
	seq := m.Content[len(m.Content)-1]
	if last.Value != "entries" || seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		return nil, exitcode.Usagef("%s: init appends to an entries list in block style (- name: ...) that ends the file; move entries: to the end, or paste this entry by hand:\n%s", path, d.Text(2))
	}
	indent := max(seq.Content[0].Column-3, 0)
	out := bytes.Clone(existing)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	out = append(out, d.Text(indent)...)
	if _, err := Parse(path, out, vocab); err != nil {
		return nil, exitcode.Usagef("%s: the file would not read back with the new entry (%v); paste it by hand:\n%s", path, err, d.Text(indent))
	}
	return out, nil
}

// Workflow is a GitHub Actions workflow that runs `ratelimit check FILE`
// with the composite Action (action.yml) at ref, passing each ${VAR} the
// file reads from a repository secret of the same name.
func Workflow(file, ref string, env []string) string {
	var b strings.Builder
	b.WriteString(`# Written by 'ratelimit init --workflow github': runs the limiter tests of
# ` + file + ` on every push and pull request; the step fails when an entry fails.
name: ratelimit
on:
  push:
  pull_request:
jobs:
  ratelimit:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5  # the Action builds ratelimit from source
        with:
          go-version: '1.26'
      - uses: ratelimit-dev/ratelimit@` + ref + `  # the composite Action: Markdown to the job summary, JUnit to a file
        with:
          command: check ` + scalar(file) + `
          junit: ratelimit-junit.xml
`)
	if len(env) > 0 {
		b.WriteString("        env:  # the ${VAR}s " + file + " reads, from repository secrets\n")
		for _, v := range env {
			fmt.Fprintf(&b, "          %s: ${{ secrets.%s }}\n", v, v)
		}
	}
	return b.String()
}
