package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/version"
)

type scriptsOptions struct {
	f *Factory

	Name   string // optional: one script
	Export string // directory to write the scripts to
	Force  bool   // with Export: replace files that exist
	Out    string // also write the catalogue document here
}

func newScriptsCmd(f *Factory, run func(*scriptsOptions) error) *cobra.Command {
	opts := &scriptsOptions{f: f}
	c := &cobra.Command{
		Use:   "scripts [NAME]",
		Short: "List, print or export the embedded limiter Lua scripts",
		Long: `The limiter scripts 'ratelimit eval' runs, ready to copy into a service:
token-bucket, sliding-window, fixed-window and gcra. Each opens with a comment
giving KEYS, ARGV with units, and the reply. Every script reads the server's
TIME, works in milliseconds, sets a TTL on every write, takes keys only through
KEYS (so it runs unchanged on Redis Cluster) and accepts an optional trailing
now_ms argument for tests and simulations.

Without NAME the scripts are listed; with NAME one is printed; --export DIR
writes them (or just NAME) as .lua files. A file of the same name in DIR is
refused (exit 2, before anything is written) unless --force, which replaces
it through a temporary file and a rename in DIR: a symbolic link there is
replaced, never written through. -o json or -o markdown lists them as a
document or a table.`,
		Example: `  ratelimit scripts
  ratelimit scripts token-bucket > token_bucket.lua
  ratelimit scripts --export ./lua
  redis-cli --eval ./lua/token_bucket.lua 'rl:{user42}:tb' , 10 5 1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if run != nil {
				return run(opts)
			}
			return runScripts(opts)
		},
	}
	c.Flags().StringVar(&opts.Export, "export", "", "write the scripts as .lua files into DIR (created if missing); files that exist are refused")
	c.Flags().BoolVar(&opts.Force, "force", false, "with --export: replace files that exist (a link is replaced, never written through)")
	c.Flags().StringVar(&opts.Out, "out", "", "also write the catalogue as a JSON document to FILE (for 'ratelimit report')")
	return c
}

func runScripts(opts *scriptsOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
	}
	if opts.Force && opts.Export == "" {
		return exitcode.Usagef("--force goes with --export DIR")
	}
	scripts := limiter.Scripts()
	if opts.Name != "" {
		s, ok := limiter.ScriptByName(opts.Name)
		if !ok {
			return exitcode.Usagef("no script named %q; the scripts are %s", opts.Name, strings.Join(limiter.ScriptNames(), ", "))
		}
		scripts = []limiter.Script{s}
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	if opts.Export != "" {
		return exportScripts(em, opts.Export, scripts, opts.Force)
	}
	cat := eval.NewCatalog(scripts, opts.Name != "")
	if opts.Name != "" && format == "text" {
		if em.out != nil {
			// the source goes to Out as is; the document only to --out
			cat.DocHeader().Stamp(doc.ToolOf(version.Get()), em.started, f.commandLine())
			if err := em.out.write(&cat); err != nil {
				return err
			}
		}
		_, err := io.WriteString(f.IO.Out, scripts[0].Source)
		return err
	}
	return em.emit(&cat)
}

func exportScripts(em *emitter, dir string, scripts []limiter.Script, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Usagef("create export directory: %v", fileErr(err))
	}
	// refuse before anything is written: a file (or link) that exists,
	// unless --force; never a directory
	for _, s := range scripts {
		path := filepath.Join(dir, s.File)
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return exitcode.Usagef("export %s: %v", path, fileErr(err))
		case fi.IsDir():
			return exitcode.Usagef("export %s: it is a directory; remove it or export to another DIR", path)
		case !force:
			what := "a file"
			if fi.Mode()&fs.ModeSymlink != 0 {
				what = "a symbolic link"
			}
			return exitcode.Usagef("export %s: %s of that name exists; pass --force to replace it, or export to an empty DIR", path, what)
		}
	}
	cat := eval.NewCatalog(scripts, false)
	for i, s := range scripts {
		path := filepath.Join(dir, s.File)
		write := createExcl
		if force {
			write = replaceFile
		}
		if err := write(dir, path, []byte(s.Source)); err != nil {
			return exitcode.Usagef("write %s: %v", path, fileErr(err))
		}
		cat.Scripts[i].Path = path
	}
	if err := em.emit(&cat); err != nil {
		if exitcode.Code(err) == exitcode.Usage {
			return err
		}
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// createExcl writes a new file at path: O_EXCL refuses anything that
// exists there, a symbolic link included (O_NOFOLLOW says so twice), so
// nothing outside DIR is ever written through a link.
func createExcl(_, path string, b []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := fh.Write(b); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

// replaceFile writes b to a new temporary file in dir (created with
// O_EXCL) and renames it over path: whatever path was (a file, a link)
// is replaced, and a link's target is never written.
func replaceFile(dir, path string, b []byte) error {
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is left to remove
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
