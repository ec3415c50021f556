package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/cluster/live"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/lualint"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/userfile"
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
	IntoSet  bool
	Rate     rate.Rate
	RateSet  bool
	Out      string
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
may be any unsigned 64-bit integers, 0 to 18446744073709551615. --template
may be at most 1024 bytes; --rate from 1e-09/s to 1e+09/s.

-f FILE holds one key per line (a trailing CR is dropped); blank lines and
lines whose first non-blank character is # are skipped, so a key that
starts with # goes on the command line or, quoted, in --groups. --groups
FILE holds one group per line, keys separated by spaces with redis-cli
quoting; blank and # lines are skipped too. Both are read line by line: a
line may be at most 1 MiB, a file at most 1000000 keys and 256 MiB. Files
(-f, --groups, --script) must be regular files (- is stdin for -f and
--groups); a script may be at most 1 MiB.

--same-slot and --groups propose a fix for keys that span slots: the
longest part every key shares as whole segments (split on : / . _ - and
other separators, at least two characters, not only the rl: namespace),
put in {} in each key, e.g. rl:{acme}:a rl:acme:b -> rl:{acme}:b.

--split KEY --into N proposes N sub-keys on N different slots, the same
proposal for the same input every time. With --redis they go to distinct
primaries when the cluster has at least N (else the note says which
primary holds more than one); offline they are spread over the slot
ranges of a default 3-primary cluster (0-5460, 5461-10922, 10923-16383,
as redis-cli --cluster create makes), and which node serves them is
unknown. The note says which numbers a client picks from.

Keys are shown as they are, UTF-8 included; control bytes (C0, DEL, C1)
and bytes that are not UTF-8 are shown as \xHH in double quotes.

With --redis the ACL user needs +ping +info +cluster|slots (the topology;
CLUSTER SHARDS is used when allowed) and, for --verify, +cluster|keyslot;
no key is read or written.

Exit 1 on a CROSSSLOT risk, a lint finding or a --verify mismatch; exit 2 on bad
input (a missing file, a malformed or too large --range, an empty key list);
exit 3 when the server cannot be reached or its ACL refuses a command.

Output (-o): text, json (save it for 'ratelimit report', or --out FILE
whatever -o is; kind "keyslot", version 2, see docs/json.md), markdown
(GitHub-flavoured tables for "$GITHUB_STEP_SUMMARY"), junit (one testcase per
group and per linted script) or github (workflow annotations).`,
		Example: `  # slots of a few keys, offline
  ratelimit keyslot 'rl:{user:42}:tb' rl:user:42:tb

  # keys from a file (or - for stdin), with nodes, checked against the server
  # (a cluster node's URL, e.g. the one 'ratelimit sandbox --cluster' printed)
  ratelimit keyslot -f keys.txt --redis redis://127.0.0.1:PORT --verify

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
			opts.IntoSet = c.Flags().Changed("into")
			opts.RateSet = c.Flags().Changed("rate")
			if run != nil {
				return run(opts)
			}
			return runKeyslot(opts)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&opts.File, "file", "f", "", "read keys from FILE, one per line, blank and # lines skipped (- for stdin)")
	fl.BoolVar(&opts.Verify, "verify", false, "ask the cluster's CLUSTER KEYSLOT for every key; exit 1 on any difference")
	fl.BoolVar(&opts.SameSlot, "same-slot", false, "the keys are used together (one script call or MULTI) and must share a slot")
	fl.StringVar(&opts.Groups, "groups", "", "FILE of key groups, one per line, keys separated by spaces (redis-cli quoting)")
	fl.StringArrayVar(&opts.Scripts, "script", nil, "lint Lua FILE (repeatable; with --script, arguments are more script files)")
	fl.StringVar(&opts.Template, "template", "", "key scheme with one %d, at most 1024 bytes, e.g. 'rl:{tenant:%d}:tb' (with --range)")
	fl.StringVar(&opts.Range, "range", "", "numbers for --template, FROM-TO (at most 10000000 of them), e.g. 1-100000")
	fl.StringVar(&opts.Split, "split", "", "propose sub-keys spreading this hot KEY over slots (with --into)")
	fl.IntVar(&opts.Into, "into", 0, "number of sub-keys for --split (2 to 1024)")
	fl.Var(&opts.Rate, "rate", "total rate of the split key, 1e-09/s to 1e+09/s; each sub-key gets 1/N (with --split)")
	fl.StringVar(&opts.Out, "out", "", "also write the JSON document to FILE (for 'ratelimit report'); checked before anything runs")
	return c
}

func runKeyslot(opts *keyslotOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
	}
	in, err := opts.input()
	if err != nil {
		return err
	}
	em, err := f.newEmitter(opts.Out)
	if err != nil {
		return err
	}
	defer em.close()
	if f.RedisOptions().URL != "" || opts.Verify {
		conn, err := f.Redis(opts.ctx)
		if err != nil {
			return err
		}
		srv := conn.Server
		in.Client, in.Server = conn.Client, &srv
		in.TLS = strings.HasPrefix(strings.ToLower(srv.Addr), "rediss://")
	}
	res, err := live.Run(opts.ctx, in)
	if errors.Is(err, live.ErrNotCluster) {
		what := "the server"
		if in.Server != nil {
			what = fmt.Sprintf("%s (%s)", in.Server.Addr, in.Server.Mode)
		}
		return exitcode.Usagef("--verify needs a Redis Cluster and %s is not one; pass --redis URL of a cluster node, e.g. from 'ratelimit sandbox --cluster'", what)
	}
	if err != nil {
		return serverError(err)
	}
	if res.Notice != "" && format != "text" {
		fmt.Fprintln(f.IO.ErrOut, "notice: "+res.Notice)
	}
	if err := em.emit(&res); err != nil {
		if exitcode.Code(err) == exitcode.Usage {
			return err
		}
		return fmt.Errorf("write report: %w", err)
	}
	if !res.Pass() {
		return exitcode.Failf("keyslot: %s", strings.Join(res.Reasons(), "; "))
	}
	return nil
}

// input checks the flags and reads the files they name into cluster
// options, each script as its lint report (lualint.Lint). Every problem
// here is bad input (exit 2).
func (opts *keyslotOptions) input() (live.Options, error) {
	var in live.Options
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
		r, closeFn, err := opts.open(opts.File, "keys file")
		if err != nil {
			return in, err
		}
		fileKeys, err := cluster.ReadKeys(r, displayName(opts.File))
		closeFn()
		if err != nil {
			return in, exitcode.Usagef("read keys: %v", err)
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
		r, closeFn, err := opts.open(opts.Groups, "groups file")
		if err != nil {
			return in, err
		}
		groups, err := cluster.ReadGroups(r, displayName(opts.Groups))
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
		src, err := userfile.Read(s, "script", userfile.MaxScript)
		if err != nil {
			return in, err
		}
		in.Scripts = append(in.Scripts, lualint.Lint(s, src))
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
	if opts.SplitSet != opts.IntoSet {
		return in, exitcode.Usagef("--split KEY and --into N go together, e.g. --split 'rl:{tenant:7}:tb' --into 4")
	}
	if opts.RateSet && !opts.SplitSet {
		return in, exitcode.Usagef("--rate is the total rate of the key given with --split")
	}
	if opts.SplitSet {
		if opts.Split == "" {
			return in, exitcode.Usagef("--split needs the hot KEY, e.g. --split 'rl:{tenant:7}:tb' --into 4")
		}
		if opts.Into < 2 || opts.Into > cluster.MaxSplit {
			return in, exitcode.Usagef("--into %d: %v", opts.Into, cluster.ErrSplitRange)
		}
		if opts.RateSet {
			if err := cluster.CheckRate(opts.Rate); err != nil {
				return in, exitcode.UsageError(err)
			}
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

// open opens name for reading, "-" being stdin: a regular file only
// (never a FIFO or a device such as /dev/zero), and never more than
// userfile.MaxDocument bytes, so a stream that never ends stops there.
func (opts *keyslotOptions) open(name, what string) (io.Reader, func(), error) {
	if name == "-" {
		return userfile.Limit(opts.f.IO.In, what+" on stdin", userfile.MaxDocument), func() {}, nil
	}
	fh, err := userfile.Open(name, what)
	if err != nil {
		return nil, nil, err
	}
	return userfile.Limit(fh, what+" "+name, userfile.MaxDocument), func() { _ = fh.Close() }, nil
}

// displayName is how errors name a file given as name ("-" is stdin).
func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// serverError turns an error of the server during the run into the exit
// code a user reads: unreachable, ACL (NOPERM, naming the rule to add)
// and BUSY are exit 3 (redisconn.Wrap), as is any other error reply (the
// server would not answer); a cancelled run keeps context.Canceled.
func serverError(err error) error {
	wrapped := redisconn.Wrap("keyslot", err)
	var rerr redis.Error
	if exitcode.Code(wrapped) == exitcode.Internal && errors.As(err, &rerr) {
		return exitcode.UnreachableError(fmt.Errorf("keyslot: the server refused: %w", err))
	}
	return wrapped
}

// fileErr drops the path that os errors repeat.
func fileErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
