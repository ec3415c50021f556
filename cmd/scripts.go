package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
writes them (or just NAME) as .lua files, replacing files of the same name.
-o json or -o markdown lists them as a document or a table.`,
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
	c.Flags().StringVar(&opts.Export, "export", "", "write the scripts as .lua files into DIR (created if missing)")
	c.Flags().StringVar(&opts.Out, "out", "", "also write the catalogue as a JSON document to FILE (for 'ratelimit report')")
	return c
}

func runScripts(opts *scriptsOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
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
		return exportScripts(em, opts.Export, scripts)
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

func exportScripts(em *emitter, dir string, scripts []limiter.Script) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Usagef("create export directory: %v", fileErr(err))
	}
	cat := eval.NewCatalog(scripts, false)
	for i, s := range scripts {
		path := filepath.Join(dir, s.File)
		if err := os.WriteFile(path, []byte(s.Source), 0o644); err != nil {
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
