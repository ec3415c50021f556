package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/userfile"
)

type reportOptions struct {
	f *Factory

	Files []string // saved documents; "-" is stdin
	HTML  string   // write one page for all documents to this file ("-": Out)
	// OutputSet is true when -o was given; with --html and without -o
	// nothing else is written to Out.
	OutputSet bool

	// maxDocument is the size ceiling of one document (file or stdin),
	// userfile.MaxDocument; tests lower it.
	maxDocument int64
}

func newReportCmd(f *Factory, run func(*reportOptions) error) *cobra.Command {
	opts := &reportOptions{f: f, maxDocument: userfile.MaxDocument}
	c := &cobra.Command{
		Use:   "report FILE.json...",
		Short: "Render saved result documents as text, JSON, Markdown, JUnit or one HTML page",
		Long: `Render documents saved by other commands (--out FILE of eval, eval
--simulate, race, load, keyslot and scripts, or their -o json) in any output
format they support. Documents are version 2 (docs/json.md, schemas in
docs/schema); version 1 documents of older releases are upgraded on read and
render the same:

  text      tables for a terminal (colour only on a terminal, never for NO_COLOR)
  json      the document again (one file: the document; several: an array)
  markdown  GitHub-flavoured tables, e.g. >> "$GITHUB_STEP_SUMMARY"
  junit     one <testsuite> per document, one <testcase> per check (eval:
            reply shape and TTL; simulate: the Go model against the
            script; scripts: an empty suite, it checks nothing)
  github    workflow annotations: an ::error per failed check, then the
            verdict (keyslot with file and line)
  html      the --html page, on standard output

Every kind renders in every format, so a mixed set (eval.json race.json
-o junit) is one report.

--html FILE writes one self-contained page for all the documents: inline CSS
and SVG charts, no scripts, nothing fetched, so it opens offline and can be
attached to a ticket. Load runs get a per-second timeline of admitted, limited
and failed requests against the admissions the verdict's model expects, the
admitted count against the expectation and its tolerance, latency percentiles
from the due time and from the send, header checks and the verdict; races get
admitted per strategy and trial against the limit; keyslot runs get keys per
slot range and per primary, CROSSSLOT groups and lint findings; eval runs get
the calls and remaining over calls. With --html, nothing else goes to standard
output unless -o is given.

Every file is checked before anything is written: a file that is not a
regular file (a device, FIFO or directory) or is over 256 MiB, is not JSON, is
truncated, is JSON from something else, has an unknown "kind" or "version", has
a key twice or holds a value out of range (a negative count or second,
percentiles out of order, a slot past 16383) is a one-line error naming the
file and the field (exit 2). Control bytes in keys and names are shown as
escapes (\n, \x1b) in every format; valid UTF-8 is shown as is. Exit 0 once every document is rendered, whatever
the verdicts in them; the commands that made them exit 1 on a failed verdict.`,
		Example: `  # a saved load run in the terminal, then as a job summary in GitHub Actions
  ratelimit load --rate 20/s --duration 30s --expect auto --out load.json
  ratelimit report load.json
  ratelimit report load.json -o markdown >> "$GITHUB_STEP_SUMMARY"

  # JUnit for the CI's test tab, from several runs at once
  ratelimit race --out race.json
  ratelimit keyslot --groups groups.txt -o json > keyslot.json
  ratelimit report race.json keyslot.json load.json -o junit > ratelimit.xml

  # one HTML page with charts for all of them
  ratelimit report race.json keyslot.json load.json --html report.html`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Files = args
			opts.OutputSet = c.Flags().Changed("output")
			if run != nil {
				return run(opts)
			}
			return runReport(opts)
		},
	}
	c.Flags().StringVar(&opts.HTML, "html", "", "also write one self-contained HTML page with charts for all documents to FILE (- for standard output)")
	return c
}

func runReport(opts *reportOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
	}
	if len(opts.Files) == 0 {
		return exitcode.Usagef("no documents; pass files saved by load --out, race --out, keyslot -o json or eval -o json")
	}
	if opts.HTML == "-" && opts.OutputSet {
		return exitcode.Usagef("--html - writes the page to standard output; drop -o or write the page to a file")
	}
	if format == "html" && opts.HTML != "" {
		return exitcode.Usagef("-o html writes the page to standard output; drop it or --html")
	}
	if format == "html" {
		opts.HTML, opts.OutputSet = "-", false
	}
	if n := slices.Index(opts.Files, "-"); n >= 0 && slices.Contains(opts.Files[n+1:], "-") {
		return exitcode.Usagef("- (stdin) given more than once")
	}
	stdin := 0
	docs := make([]report.Document, 0, len(opts.Files))
	for _, name := range opts.Files {
		source := name
		if name == "-" {
			source = "stdin"
		}
		data, err := readDocument(f, name, opts.maxDocument, &stdin)
		if err != nil {
			return err
		}
		d, err := report.Decode(data)
		if err != nil {
			return exitcode.Usagef("report: %s: %v", report.Printable(source), err)
		}
		d.Source = source
		docs = append(docs, d)
	}
	writeText := opts.HTML == "" || opts.OutputSet
	if writeText {
		for _, d := range docs {
			if !slices.Contains(report.Formats(d.Kind), format) {
				return exitcode.Usagef("%s: %s documents have no %s output; use %s", report.Printable(d.Source), d.Kind, format, strings.Join(report.Formats(d.Kind), ", "))
			}
		}
	}
	if opts.HTML != "" {
		if err := writeHTML(f, opts.HTML, docs); err != nil {
			return err
		}
		if !writeText {
			if opts.HTML != "-" {
				fmt.Fprintf(f.IO.ErrOut, "report: wrote %s (%d %s)\n", opts.HTML, len(docs), map[bool]string{true: "document", false: "documents"}[len(docs) == 1])
			}
			return nil
		}
	}
	return renderDocuments(f, format, docs)
}

// readDocument reads a regular file of at most max bytes, or stdin for
// "-" (once, with the same ceiling). Devices, FIFOs and directories are
// refused before they are opened, so /dev/zero or a pipe nobody writes to
// cannot exhaust memory or block.
func readDocument(f *Factory, name string, max int64, stdin *int) ([]byte, error) {
	if name == "-" {
		*stdin++
		if *stdin > 1 {
			return nil, exitcode.Usagef("- (stdin) given more than once")
		}
		data, err := io.ReadAll(userfile.Limit(f.IO.In, "the document on standard input", max))
		if err != nil {
			if exitcode.Code(err) == exitcode.Usage {
				return nil, err
			}
			return nil, exitcode.Usagef("read stdin: %v", err)
		}
		return data, nil
	}
	return userfile.Read(name, "document", max)
}

func writeHTML(f *Factory, path string, docs []report.Document) error {
	var buf bytes.Buffer
	if err := report.HTML(&buf, docs, report.HTMLOptions{Generated: f.Now()}); err != nil {
		return err
	}
	if path == "-" {
		_, err := f.IO.Out.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return exitcode.Usagef("write --html %s: %v", path, fileErr(err))
	}
	return nil
}

// renderDocuments writes the documents to Out in format: junit as one
// report, json as the document or an array, the others one after another.
func renderDocuments(f *Factory, format string, docs []report.Document) error {
	out := f.IO.Out
	switch {
	case format == "junit":
		vals := make([]any, len(docs))
		for i, d := range docs {
			vals[i] = d
		}
		return report.JUnit(out, vals...)
	case format == "json" && len(docs) > 1:
		vals := make([]any, len(docs))
		for i, d := range docs {
			vals[i] = d.Value
		}
		return report.JSON(out, vals)
	}
	for i, d := range docs {
		var sep string
		if i > 0 {
			sep = "\n"
		}
		if format == "text" && len(docs) > 1 {
			src := report.Printable(d.Source)
			sep += "── " + src + " " + strings.Repeat("─", max(3, 56-len([]rune(src)))) + "\n"
		}
		if _, err := io.WriteString(out, sep); err != nil {
			return err
		}
		if err := report.Render(out, format, d, f.ReportOptions()); err != nil {
			if errors.Is(err, report.ErrDocument) {
				return exitcode.UsageError(err)
			}
			return fmt.Errorf("render %s: %w", report.Printable(d.Source), err)
		}
	}
	return nil
}
