package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/report"
)

type keyslotOptions struct {
	f   *Factory
	ctx context.Context

	Args     []string // keys, or script files with --script
	File     string   // -f: keys, one per line; "-" is stdin
	Verify   bool
	SameSlot bool
	Groups   string
	Scripts  []string
	Template string
	Range    string
	Split    string
	SplitSet bool
	Into     int
	Rate     rate.Rate
}

func newKeyslotCmd(f *Factory, run func(*keyslotOptions) error) *cobra.Command {
	opts := &keyslotOptions{f: f}
	c := &cobra.Command{
		Use:   "keyslot [KEY...]",
		Short: "Show Redis Cluster slots of keys and catch CROSSSLOT risks in CI",
		Long: `Compute the Redis Cluster hash slot of keys (CRC16 of the hash tag, the text
between the first { and the first } after it when not empty, else of the whole
key, mod 16384), check that keys used together share a slot, lint Lua scripts
for key arguments that do not come from KEYS, and show how a key scheme spreads
over slots. Everything works offline; with --redis pointing at a cluster node it
also shows the primary and replicas serving each slot, and --verify asks the
server's CLUSTER KEYSLOT for every key.

--range takes at most 10000000 numbers (about a second of work); FROM and TO
may be any non-negative 64-bit integers.

Exit 1 on a CROSSSLOT risk, a lint finding or a --verify mismatch; exit 2 on bad
input (a missing file, a malformed or too large --range, an empty key list).

Output (-o): text, json (save it for 'ratelimit report'), markdown
(GitHub-flavoured tables for "$GITHUB_STEP_SUMMARY"), junit (one testcase per
group and per linted script) or github (workflow annotations).`,
		Example: `  # slots of a few keys, offline
  ratelimit keyslot 'rl:{user:42}:tb' rl:user:42:tb

  # keys from a file (or - for stdin), with nodes, checked against the server
  ratelimit keyslot -f keys.txt --redis redis://127.0.0.1:7101 --verify

  # keys one script call uses must share a slot (exit 1 if not)
  ratelimit keyslot --same-slot 'rl:{user:42}:minute' 'rl:{user:42}:day'
  ratelimit keyslot --groups groups.txt -o junit > keyslot.xml

  # lint Lua scripts in CI, with GitHub annotations
  ratelimit keyslot --script scripts/*.lua -o github

  # how a key scheme spreads; split a hot key over 4 slots
  ratelimit keyslot --template 'rl:{tenant:%d}:tb' --range 1-100000
  ratelimit keyslot --split 'rl:{tenant:7}:tb' --into 4 --rate 1000/s`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.ctx = c.Context()
			opts.Args = args
			opts.SplitSet = c.Flags().Changed("split")
			if run != nil {
				return run(opts)
			}
			return runKeyslot(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.File, "file", "f", "", "read keys from FILE, one per line (- for stdin)")
	fl.BoolVar(&opts.Verify, "verify", false, "ask the cluster's CLUSTER KEYSLOT for every key; exit 1 on any difference")
	fl.BoolVar(&opts.SameSlot, "same-slot", false, "the keys are used together (one script call or MULTI) and must share a slot")
	fl.StringVar(&opts.Groups, "groups", "", "FILE of key groups, one per line, keys separated by spaces (redis-cli quoting)")
	fl.StringArrayVar(&opts.Scripts, "script", nil, "lint Lua FILE (repeatable; with --script, arguments are more script files)")
	fl.StringVar(&opts.Template, "template", "", "key scheme with one %d, e.g. 'rl:{tenant:%d}:tb' (with --range)")
	fl.StringVar(&opts.Range, "range", "", "numbers for --template, FROM-TO (at most 10000000 of them), e.g. 1-100000")
	fl.StringVar(&opts.Split, "split", "", "propose sub-keys spreading this hot KEY over slots (with --into)")
	fl.IntVar(&opts.Into, "into", 0, "number of sub-keys for --split (2 to 1024)")
	fl.Var(&opts.Rate, "rate", "total rate of the split key; each sub-key gets 1/N (with --split)")
	return c
}

func runKeyslot(opts *keyslotOptions) error {
	f := opts.f
	format, err := f.Format("text", "json", "markdown", "junit", "github")
	if err != nil {
		return err
	}
	in, err := opts.input()
	if err != nil {
		return err
	}
	if f.RedisOptions().URL != "" || opts.Verify {
		conn, err := f.Redis(opts.ctx)
		if err != nil {
			return err
		}
		srv := conn.Server
		in.Client, in.Server = conn.Client, &srv
		in.TLS = strings.HasPrefix(strings.ToLower(srv.Addr), "rediss://")
	}
	res, err := cluster.Run(opts.ctx, in)
	if errors.Is(err, cluster.ErrNotCluster) {
		what := "the server"
		if in.Server != nil {
			what = fmt.Sprintf("%s (%s)", in.Server.Addr, in.Server.Mode)
		}
		return exitcode.Usagef("--verify needs a Redis Cluster and %s is not one; pass --redis URL of a cluster node, e.g. from 'ratelimit sandbox --cluster'", what)
	}
	if err != nil {
		return fmt.Errorf("keyslot: %w", err)
	}
	if res.Notice != "" && format != "text" {
		fmt.Fprintln(f.IO.ErrOut, "notice: "+res.Notice)
	}
	if err := report.Render(f.IO.Out, format, res, f.ReportOptions()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if !res.Pass() {
		return exitcode.Failf("keyslot: %s", strings.Join(res.Reasons, "; "))
	}
	return nil
}

// input checks the flags and reads the files they name into cluster
// options. Every problem here is bad input (exit 2).
func (opts *keyslotOptions) input() (cluster.Options, error) {
	var in cluster.Options
	scripts := opts.Scripts
	keys := opts.Args
	if len(scripts) > 0 {
		scripts = append(scripts, opts.Args...)
		keys = nil
	}
	if opts.File != "" && opts.File == opts.Groups && opts.File == "-" {
		return in, exitcode.Usagef("-f - and --groups - cannot both read stdin")
	}
	if opts.File != "" {
		r, closeFn, err := opts.open(opts.File, "keys")
		if err != nil {
			return in, err
		}
		fileKeys, err := cluster.ReadKeys(r)
		closeFn()
		if err != nil {
			return in, exitcode.Usagef("read keys from %s: %v", opts.File, err)
		}
		if len(fileKeys) == 0 {
			return in, exitcode.Usagef("no keys in %s; write one key per line", opts.File)
		}
		keys = append(keys, fileKeys...)
	}
	in.Keys = keys
	if opts.SameSlot {
		if len(keys) < 2 {
			return in, exitcode.Usagef("--same-slot needs at least two keys, e.g. --same-slot 'rl:{user:42}:minute' 'rl:{user:42}:day'")
		}
		in.SameSlot = true
	}
	if opts.Verify {
		if len(keys) == 0 {
			return in, exitcode.Usagef("--verify needs keys: pass them as arguments or with -f FILE")
		}
		in.Verify = true
	}
	if opts.Groups != "" {
		r, closeFn, err := opts.open(opts.Groups, "groups")
		if err != nil {
			return in, err
		}
		groups, err := cluster.ReadGroups(r, opts.Groups)
		closeFn()
		if err != nil {
			return in, exitcode.Usagef("read groups: %v", err)
		}
		if len(groups) == 0 {
			return in, exitcode.Usagef("no groups in %s; write the keys of one group per line, separated by spaces", opts.Groups)
		}
		in.Groups = groups
	}
	for _, s := range scripts {
		src, err := os.ReadFile(s)
		if err != nil {
			return in, exitcode.Usagef("read script %s: %v", s, fileErr(err))
		}
		in.Scripts = append(in.Scripts, cluster.Script{File: s, Src: src})
	}
	if (opts.Template == "") != (opts.Range == "") {
		return in, exitcode.Usagef("--template and --range go together, e.g. --template 'rl:{tenant:%%d}:tb' --range 1-100000")
	}
	if opts.Template != "" {
		tpl, err := cluster.ParseTemplate(opts.Template)
		if err != nil {
			return in, exitcode.UsageError(err)
		}
		from, to, err := cluster.ParseRange(opts.Range)
		if err != nil {
			return in, exitcode.UsageError(err)
		}
		in.Template, in.From, in.To = &tpl, from, to
	}
	if opts.SplitSet != (opts.Into != 0) {
		return in, exitcode.Usagef("--split KEY and --into N go together, e.g. --split 'rl:{tenant:7}:tb' --into 4")
	}
	if !opts.Rate.IsZero() && !opts.SplitSet {
		return in, exitcode.Usagef("--rate is the total rate of the key given with --split")
	}
	if opts.SplitSet {
		if opts.Into < 2 || opts.Into > cluster.MaxSplit {
			return in, exitcode.Usagef("--into %d: %v", opts.Into, cluster.ErrSplitRange)
		}
		in.SplitKey, in.Into, in.Rate = opts.Split, opts.Into, opts.Rate
	}
	if len(in.Keys) == 0 && len(in.Groups) == 0 && len(in.Scripts) == 0 && in.Template == nil && !opts.SplitSet {
		if opts.File != "" || len(opts.Scripts) > 0 {
			return in, exitcode.Usagef("empty key list")
		}
		return in, exitcode.Usagef("nothing to check: pass keys, -f FILE, --groups FILE, --script FILE, --template with --range, or --split KEY --into N")
	}
	return in, nil
}

// open opens name for reading, "-" being stdin.
func (opts *keyslotOptions) open(name, what string) (io.Reader, func(), error) {
	if name == "-" {
		return opts.f.IO.In, func() {}, nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, nil, exitcode.Usagef("open %s file %s: %v", what, name, fileErr(err))
	}
	return fh, func() { _ = fh.Close() }, nil
}

// fileErr drops the path that os errors repeat.
func fileErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
