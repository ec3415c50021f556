package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/version"
)

// Every command that produces a document (eval, eval --simulate, race,
// load, keyslot, scripts) writes it through one emitter:
//
//   - newEmitter, before the run, checks -o and opens --out FILE without
//     truncating it (a path that cannot be written is exit 2 at once, and
//     nothing has run);
//   - emit, after the run, stamps the document's envelope (the build, the
//     start, the command line with secrets masked), writes it to --out as
//     JSON and renders -o to Out;
//   - a --out that fails to be written after the run is exit 2 as well,
//     reported after Out got its report, whatever the verdict: the
//     document the user asked for is missing.

// document is what a command emits: every result embeds doc.Header.
type document interface{ DocHeader() *doc.Header }

type emitter struct {
	f       *Factory
	format  string
	out     *outFile // nil without --out
	started time.Time
}

// newEmitter checks -o and opens --out (path "" means none), before the
// command runs anything. Call close when the command returns.
func (f *Factory) newEmitter(outPath string) (*emitter, error) {
	format, err := f.Format()
	if err != nil {
		return nil, err
	}
	e := &emitter{f: f, format: format, started: f.Now()}
	if outPath != "" {
		if e.out, err = openOut("--out", outPath); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// close releases --out when no document was written: a file newEmitter
// created is removed, an existing one is left as it was.
func (e *emitter) close() {
	if e.out != nil {
		e.out.abort()
	}
}

// emit stamps res, writes it to --out and renders it to Out.
func (e *emitter) emit(res document) error {
	res.DocHeader().Stamp(doc.ToolOf(version.Get()), e.started, e.f.commandLine())
	var outErr error
	if e.out != nil {
		outErr = e.out.write(res)
	}
	if err := report.Render(e.f.IO.Out, e.format, res, e.f.ReportOptions()); err != nil {
		return err
	}
	return outErr
}

// commandLine is the command as typed (Factory.Args, else os.Args), the
// program named "ratelimit", with secrets masked (maskArgs).
func (f *Factory) commandLine() []string {
	args := f.Args
	if args == nil && len(os.Args) > 0 {
		args = os.Args[1:]
	}
	return append([]string{"ratelimit"}, maskArgs(args)...)
}

// secretHeader reports whether an HTTP header named name carries a secret.
func secretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	return secret.IsSecretParam(n) || strings.Contains(n, "key") || strings.Contains(n, "cookie") || n == "proxy-authorization"
}

// maskArgs masks what a document must not carry of a command line: every
// word through secret.Redact (URL passwords, password= parameters), the
// values of headers that carry credentials (-H 'Authorization: ...',
// X-API-Key), an inline --body, and --identity when --hash-identity hides
// it from the key names.
func maskArgs(args []string) []string {
	out := make([]string, len(args))
	hashed := false
	for _, a := range args {
		if a == "--" {
			break
		}
		hashed = hashed || a == "--hash-identity" || strings.HasPrefix(a, "--hash-identity=") && a != "--hash-identity=false"
	}
	header := func(v string) string {
		if name, _, ok := strings.Cut(v, ":"); ok && secretHeader(name) {
			return name + ": " + secret.Mask
		}
		return v
	}
	body := func(v string) string {
		if strings.HasPrefix(v, "@") || v == "" {
			return v
		}
		return secret.Mask
	}
	identity := func(v string) string {
		if hashed {
			return secret.Mask
		}
		return v
	}
	valued := map[string]func(string) string{"-H": header, "--header": header, "--body": body, "--identity": identity}
	after := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		out[i] = secret.Redact(a)
		if after {
			continue
		}
		if a == "--" {
			after = true
			continue
		}
		if mask, ok := valued[a]; ok && i+1 < len(args) {
			out[i+1] = mask(secret.Redact(args[i+1]))
			i++
			continue
		}
		for flag, mask := range valued {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				out[i] = flag + "=" + mask(secret.Redact(v))
			} else if flag == "-H" && strings.HasPrefix(a, "-H") && len(a) > 2 && !strings.HasPrefix(a, "-H=") {
				out[i] = "-H" + header(secret.Redact(a[2:]))
			}
		}
	}
	return out
}

// outFile is --out, opened before the run so that a path that cannot be
// written is refused (exit 2) before anything runs.
type outFile struct {
	flag    string // the flag that named it: --out
	path    string
	fh      *os.File
	created bool // by openOut: removed again if no document is written
}

// openOut opens path (named by flag: --out) for the document without
// truncating it: an existing file keeps its contents until write. Only a regular file (or a new one)
// is accepted: a FIFO would block and a directory cannot hold it.
func openOut(flag, path string) (*outFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, exitcode.Usagef("%s %s is not a regular file; name a file to write the JSON document to", flag, path)
	}
	created := true
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		created = false
		fh, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		return nil, exitcode.Usagef("%s %s cannot be written: %v; pass a writable path", flag, path, errors.Unwrap(err))
	}
	return &outFile{flag: flag, path: path, fh: fh, created: created}, nil
}

// write replaces the file's contents with the JSON document of doc.
func (o *outFile) write(doc any) error {
	fh := o.fh
	o.fh = nil
	var buf bytes.Buffer
	if err := report.Render(&buf, "json", doc, report.Options{}); err != nil {
		fh.Close()
		return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
	}
	err := fh.Truncate(0)
	if err == nil {
		_, err = fh.WriteAt(buf.Bytes(), 0)
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return exitcode.Usagef("write %s %s: %v", o.flag, o.path, err)
	}
	return nil
}

// abort closes the file if no document was written, removing it if openOut
// created it: a run that failed leaves no empty file behind.
func (o *outFile) abort() {
	if o.fh == nil {
		return
	}
	o.fh.Close()
	o.fh = nil
	if o.created {
		_ = os.Remove(o.path)
	}
}
