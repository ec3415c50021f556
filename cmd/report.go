package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/recording"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/userfile"
	"github.com/ratelimit-dev/ratelimit/version"
)

type reportOptions struct {
	AllowUndecided bool

	f *Factory

	Files []string // saved documents; "-" is stdin
	HTML  string   // write one page for all documents to this file ("-": Out)
	// ExitCode: exit 1 when a document's verdict failed (for CI).
	ExitCode bool
	// OutputSet is true when -o was given; with --html and without -o
	// nothing else is written to Out.
	OutputSet bool

	// maxDocument is the size ceiling of one document (file or stdin),
	// userfile.MaxDocument; tests lower it.
	maxDocument int64

	// --from: judge another tool's recording (the one file) as load
	// judges a run, with load's flags for the verdict.
	From          string
	Expect        string
	IdentityTag   string
	Out           string
	ExpectStatus  string
	LimitedStatus string
	MaxFailed     string
	Thresholds    []string
	Headers429    string
	ReorderWindow time.Duration
	maxFailedSet  bool
	fromFlags     []string // the --from flags given, for the error without --from
}

// fromFlagNames are the flags that only apply with --from.
var fromFlagNames = []string{"expect", "identity-tag", "out", "expect-status", "limited-status", "max-failed", "threshold", "headers", "reorder-window"}

func newReportCmd(f *Factory, run func(*reportOptions) error) *cobra.Command {
	opts := &reportOptions{f: f, maxDocument: userfile.MaxDocument}
	c := &cobra.Command{
		Use:   "report FILE.json... | report --from k6|vegeta FILE",
		Short: "Render saved result documents, or judge a k6 or vegeta recording, as text, JSON, Markdown, JUnit or HTML",
		Long: `Render documents saved by other commands (--out FILE, or -o json, of
eval, eval --simulate, scripts, race, load, merge, report --from, keyslot,
probe and failover) in any output format. Kinds this build reads:
` + reportKinds() + `.
Each kind has its own version (docs/json.md, schemas in docs/schema): ` + reportVersions() + `;
older versions are upgraded on read and render the same:

  text      tables for a terminal (colour only on a terminal, never for NO_COLOR)
  json      the document again (one file: the document; several: an array)
  markdown  GitHub-flavoured tables, e.g. >> "$GITHUB_STEP_SUMMARY"
  junit     one <testsuite> per document, one <testcase> per check (eval:
            reply shape and TTL; simulate: the Go model against the
            script; probe and failover: one per check; scripts: an empty
            suite, it checks nothing)
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
the calls and remaining over calls; probe runs their report card; failover
runs a table per variant with the trade-off of WAIT. With --html, nothing else goes to standard
output unless -o is given.

Every file is checked before anything is written: a file that is not a
regular file (a device, FIFO or directory) or is over 256 MiB, is not JSON, is
truncated, is JSON from something else, has an unknown "kind" or "version", has
a key twice or holds a value out of range (a negative count or second,
percentiles out of order, a slot past 16383), or an array, string or map no
document holds (a timeline longer than its run, a note of 200 MB: checked
in one pass before the file is read into memory) is a one-line error naming
the file and the field (exit 2). --html must name a regular file, or - for
standard output (a FIFO would block for ever). Control bytes in keys and names are shown as
escapes (\n, \x1b) in every format; valid UTF-8 is shown as is. Exit 0 once every document is rendered, whatever
the verdicts in them (the commands that made them exit 1 on a failed verdict); in CI, pass --exit-code: exit 1
when any document's verdict failed, as k6 exits on a failed threshold. --html FILE prints where it wrote the page
and the headline verdict on standard error.

--from k6|vegeta FILE judges a run another tool recorded (FILE, or - for
standard input) as 'ratelimit load' judges its own, into a load document
marked with its source: --expect, --expect-status, --max-failed, --threshold
and --headers as in load, every format and --out FILE as load writes them,
exit 0 pass, 1 the verdict failed, 2 a file that cannot be read (one line
naming the file and the line) or passes a ceiling: a gzip that inflates to
more than 200 times its size (past 16 MiB) or 32 GiB, more than 1,000,000
blank lines or 1,000,000,000 lines (or vegeta records). A vegeta result's
body is never kept, however long. FILE is k6's 'k6 run --out json=FILE'
(NDJSON, gzipped or not: one http_req_duration point per request; its time
is the end, so the send is the time minus the duration) or vegeta's
'vegeta attack' output (gob, or JSON or CSV from 'vegeta encode'; the
encoding is detected; its Timestamp is the send). --identity-tag NAME is
the k6 tag on each request that names its identity (set it per request in
the script), or the response header that does for vegeta, which records
the response's headers but not the request's. What a recording lacks is
said, not invented: its due times are unknown (latency from the due time
is latency from the send), dropped iterations are only those k6 records
(dropped_iterations), and the header checks are skipped without response
headers: vegeta records them, k6 does not unless the script counts each
response in a Counter named ratelimit_headers tagged with them (docs/load.md:
"Already using k6 or vegeta?"). --expect auto needs RateLimit-Policy, so a
recording without headers needs --expect MODEL. The file is read once in
constant memory (histograms, one timeline entry per second, models per
identity); the sends reach the verdict through a reorder buffer that waits
for the longest latency seen plus --reorder-window, and a response later
than that is refused (exit 2) naming its line.`,
		Example: `  # a saved load run in the terminal, then as a job summary in GitHub Actions
  ratelimit load --target http://127.0.0.1:PORT/hello --rate 20/s --duration 30s --out load.json
  ratelimit report load.json
  ratelimit report load.json -o markdown >> "$GITHUB_STEP_SUMMARY"

  # JUnit for the CI's test tab, from several runs at once
  ratelimit race --redis embedded --out race.json
  ratelimit keyslot --groups groups.txt -o json > keyslot.json
  ratelimit report race.json keyslot.json load.json -o junit > ratelimit.xml

  # in CI: fail the job when a saved run failed
  ratelimit report load.json -o markdown --exit-code >> "$GITHUB_STEP_SUMMARY"

  # one HTML page with charts for all of them
  ratelimit report race.json keyslot.json load.json --html report.html

  # judge what k6 or vegeta recorded against 'ratelimit serve --capacity 10 --rate 5/s'
  k6 run --out json=results.json script.js
  ratelimit report --from k6 results.json --expect token-bucket:burst=10,rate=5/s
  echo "GET http://127.0.0.1:PORT/hello" | vegeta attack -rate 20 -duration 30s > results.bin
  ratelimit report --from vegeta results.bin --expect auto --html report.html`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Files = args
			opts.OutputSet = c.Flags().Changed("output")
			opts.maxFailedSet = c.Flags().Changed("max-failed")
			opts.fromFlags = nil
			for _, name := range fromFlagNames {
				if c.Flags().Changed(name) {
					opts.fromFlags = append(opts.fromFlags, "--"+name)
				}
			}
			if run != nil {
				return run(opts)
			}
			return runReport(opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.HTML, "html", "", "also write one self-contained HTML page with charts for all documents to FILE (- for standard output); the headline verdict goes to standard error")
	fl.BoolVar(&opts.ExitCode, "exit-code", false, "exit 1 when a document's verdict failed (use it in CI); without it, exit 0 once every document is rendered")
	fl.StringVar(&opts.From, "from", "", "judge a recording of another tool instead: k6 (k6 run --out json) or vegeta (vegeta attack, gob, JSON or CSV)")
	fl.StringVar(&opts.Expect, "expect", "", "with --from: judge the admitted count, as load --expect (auto needs recorded RateLimit-Policy headers)")
	fl.StringVar(&opts.IdentityTag, "identity-tag", "", "with --from: the k6 tag, or the vegeta response header, that names each request's identity (one limiter per identity)")
	fl.StringVar(&opts.Out, "out", "", "with --from: also write the load document to FILE (for 'ratelimit report')")
	fl.BoolVar(&opts.AllowUndecided, "allow-undecided", false, "with --from: exit 0, not 1, when the recording decided nothing (UNDECIDED)")
	fl.StringVar(&opts.ExpectStatus, "expect-status", "200,429", "with --from: statuses that are not failures, as load")
	fl.StringVar(&opts.LimitedStatus, "limited-status", "", "with --from: statuses besides 429 that are the limiter's refusals, as load")
	fl.StringVar(&opts.MaxFailed, "max-failed", "1%", "with --from: threshold on failed requests, as load")
	fl.StringArrayVar(&opts.Thresholds, "threshold", nil, "with --from: check METRIC OP VALUE at the end, as load (latency from the due time is the latency from the send)")
	fl.StringVar(&opts.Headers429, "headers", load.HeadersFail, "with --from: broken rate limit headers fail the verdict (fail), are reported only (warn) or are not checked (off)")
	fl.DurationVar(&opts.ReorderWindow, "reorder-window", recording.DefaultReorderWindow, "with --from: how long past the longest latency seen to wait for responses written out of order")
	return c
}

// reportVersions names the version each kind is written in: "eval 2,
// ..., probe 1".
func reportVersions() string {
	var out []string
	for _, k := range report.Kinds() {
		vs := report.Versions(k)
		out = append(out, fmt.Sprintf("%s %d", k, vs[len(vs)-1]))
	}
	return strings.Join(out, ", ")
}

// reportKinds names the document kinds report reads: "eval, simulate, ...".
func reportKinds() string { return strings.Join(report.Kinds(), ", ") }

func runReport(opts *reportOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
	}
	if opts.From != "" {
		return runReportFrom(opts, format)
	}
	if len(opts.fromFlags) > 0 {
		return exitcode.Usagef("%s judges a recording: give --from k6 or --from vegeta and its file", opts.fromFlags[0])
	}
	if len(opts.Files) == 0 {
		return exitcode.Usagef("no documents; pass files saved with --out or -o json (kinds: %s)", reportKinds())
	}
	if err := opts.htmlTarget(format); err != nil {
		return err
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
		var d report.Document
		data, err := readDocument(f, name, opts.maxDocument, &stdin)
		if err == nil {
			d, err = report.Decode(data)
		}
		if errors.Is(err, report.ErrDocument) {
			return exitcode.Usagef("report: %s: %v", report.Printable(source), err)
		}
		if err != nil {
			return err
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
				fmt.Fprintf(f.IO.ErrOut, "report: wrote %s (%d %s): %s\n", opts.HTML, len(docs), map[bool]string{true: "document", false: "documents"}[len(docs) == 1], headline(docs))
			}
			return opts.gate(docs)
		}
	}
	if err := renderDocuments(f, format, docs); err != nil {
		return err
	}
	return opts.gate(docs)
}

// headline is the verdict of a set of documents in one line: "PASS", or
// "FAIL: 1 of 3 failed (load.json)"; "no verdict" when no kind has one.
func headline(docs []report.Document) string {
	var judged int
	var failed []string
	for _, d := range docs {
		pass, has := report.Verdict(d)
		if !has {
			continue
		}
		judged++
		if !pass {
			failed = append(failed, report.Printable(d.Source))
		}
	}
	switch {
	case judged == 0:
		return "no verdict (no document holds checks)"
	case len(failed) == 0:
		return "verdict PASS"
	}
	return fmt.Sprintf("verdict FAIL: %d of %d failed (%s)", len(failed), judged, strings.Join(failed, ", "))
}

// gate is the exit of rendered documents: 0, or with --exit-code 1 when
// a document's verdict failed.
func (opts *reportOptions) gate(docs []report.Document) error {
	if !opts.ExitCode {
		return nil
	}
	if h := headline(docs); strings.HasPrefix(h, "verdict FAIL") {
		return exitcode.Failf("report: %s", h)
	}
	return nil
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
	// One streaming pass first: a forged document (a note of 200 MB, two
	// million status codes) is refused before the file is read into
	// memory. Its error wraps report.ErrDocument, as Decode's do.
	fh, err := userfile.Open(name, "document")
	if err != nil {
		return nil, err
	}
	err = report.Scan(io.LimitReader(fh, max))
	fh.Close()
	if err != nil {
		return nil, err
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

// runReportFrom judges one recording of another tool (--from) as load
// judges a run: the document is stamped, written to --out, rendered in
// format (and --html), and a failed verdict is exit 1.
func runReportFrom(opts *reportOptions, format string) error {
	f := opts.f
	o, err := opts.recordOptions()
	if err != nil {
		return err
	}
	if len(opts.Files) != 1 {
		return exitcode.Usagef("--from %s reads one recording (a file, or - for standard input); got %d", o.Source, len(opts.Files))
	}
	if err := opts.htmlTarget(format); err != nil {
		return err
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	name := opts.Files[0]
	var in io.Reader = f.IO.In
	o.Name = "stdin"
	if name != "-" {
		fh, err := userfile.Open(name, "recording")
		if err != nil {
			return err
		}
		defer fh.Close()
		in, o.Name = fh, name
	}
	res, err := recording.Read(in, o)
	if err != nil {
		return err
	}
	if opts.HTML == "" {
		if err := em.emit(res); err != nil {
			return err
		}
		return reportOutcome(res, opts.AllowUndecided)
	}
	res.DocHeader().Stamp(doc.ToolOf(version.Get()), em.started, f.commandLine())
	if em.out != nil {
		if err := em.out.write(res); err != nil {
			return err
		}
	}
	d := report.Document{Kind: tally.Kind, Version: tally.Version, Value: res, Source: o.Name}
	if err := writeHTML(f, opts.HTML, []report.Document{d}); err != nil {
		return err
	}
	if opts.OutputSet {
		if err := renderDocuments(f, format, []report.Document{d}); err != nil {
			return err
		}
	} else if opts.HTML != "-" {
		fmt.Fprintf(f.IO.ErrOut, "report: wrote %s: %s\n", opts.HTML, headline([]report.Document{d}))
	}
	return reportOutcome(res, opts.AllowUndecided)
}

// reportOutcome is the exit of a judged recording: 1 when the verdict
// failed, as load's.
func reportOutcome(res *tally.Result, allowUndecided bool) error {
	if err := noPolicyToRead(res); err != nil {
		return err
	}
	if res.Verdict == "fail" {
		return exitcode.Failf("report: %s", strings.Join(res.VerdictMessages, "; "))
	}
	if res.Verdict == doc.VerdictUndecided {
		return undecidedExit(allowUndecided, "report", strings.Join(res.VerdictMessages, "; "))
	}
	return nil
}

// recordOptions turns the --from flags into recording.RecordOptions; every
// error is exit 2.
func (opts *reportOptions) recordOptions() (recording.RecordOptions, error) {
	src := strings.ToLower(strings.TrimSpace(opts.From))
	if !slices.Contains(recording.Sources, src) {
		return recording.RecordOptions{}, exitcode.Usagef("--from %q: use %s", opts.From, strings.Join(recording.Sources, " or "))
	}
	o := recording.RecordOptions{Source: src, IdentityTag: strings.TrimSpace(opts.IdentityTag), ReorderWindow: opts.ReorderWindow,
		HeaderMode: strings.ToLower(strings.TrimSpace(opts.Headers429))}
	if opts.IdentityTag != "" && o.IdentityTag == "" {
		return o, exitcode.Usagef("--identity-tag is blank; name the k6 tag or vegeta response header that carries the identity")
	}
	if opts.ReorderWindow <= 0 {
		return o, exitcode.Usagef("--reorder-window must be positive, e.g. 60s")
	}
	var err error
	o.Expect = judge.Default()
	if opts.Expect != "" {
		if o.Expect, err = judge.ParseExpect(opts.Expect); err != nil {
			return o, err
		}
	}
	if o.ExpectStatus, err = load.ParseStatuses(opts.ExpectStatus); err != nil {
		return o, err
	}
	if o.LimitedStatus, err = limitedStatuses(opts.LimitedStatus, o.ExpectStatus); err != nil {
		return o, err
	}
	if o.MaxFailed, err = load.ParsePercent(opts.MaxFailed); err != nil {
		return o, err
	}
	for _, s := range opts.Thresholds {
		th, err := judge.ParseThreshold(s)
		if err != nil {
			return o, err
		}
		o.Thresholds = append(o.Thresholds, th)
		// a threshold on failed replaces the default --max-failed, as in load
		o.NoMaxFailed = o.NoMaxFailed || th.Metric == "failed" && !opts.maxFailedSet
	}
	return o, o.Validate()
}

// htmlTarget checks --html against -o: the page goes to a file, or with
// --html - or -o html to standard output, never both ways at once.
func (opts *reportOptions) htmlTarget(format string) error {
	if opts.HTML == "-" && opts.OutputSet {
		return exitcode.Usagef("--html - writes the page to standard output; drop -o or write the page to a file")
	}
	if format == "html" && opts.HTML != "" {
		return exitcode.Usagef("-o html writes the page to standard output; drop it or --html")
	}
	if format == "html" {
		opts.HTML, opts.OutputSet = "-", false
	}
	return checkOutPath("--html", opts.HTML)
}

// checkOutPath refuses (exit 2), before anything runs, an output path that
// exists and is not a regular file: writing to a FIFO blocks until a
// reader comes, for ever if none does, and a device or directory cannot
// hold the page. "-" and "" are standard output and none.
func checkOutPath(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return exitcode.Usagef("%s %s is not a regular file; name a file to write to (or - for standard output)", flag, path)
	}
	return nil
}
