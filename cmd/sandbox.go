package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/report"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

type sandboxOptions struct {
	f         *Factory
	ctx       context.Context
	Cluster   bool
	Primaries int
	Replicas  int
	PortBase  int
	ServerBin string
	For       time.Duration
	ServerArg []string
	Timeout   time.Duration
	// Topology is --topology: standalone or cluster (Cluster is read from it).
	Topology string
	// OldCluster: the deprecated --cluster was given.
	OldCluster bool
}

func newSandboxCmd(f *Factory, run func(*sandboxOptions) error) *cobra.Command {
	opts := &sandboxOptions{f: f}
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Start a disposable local redis-server or cluster for tests",
		Long: `Start a disposable redis-server (or valkey-server) on free loopback ports, with
persistence off and data in a temporary directory, print the URL to pass as
--redis, and stay in the foreground until Ctrl-C or --duration elapses. Then stop
exactly the processes it started and remove the directory.

Output (-o): text (the URL on standard output) or json (one indented JSON
object on several lines, printed once the servers are up: kind, version, url,
addrs, cluster, product, dir). There is no markdown or junit output:
sandbox checks nothing and reports no results, it only starts servers. It
connects to no existing server, so it takes no --redis, --redis-timeout,
--tls-* or global --cluster.

--topology cluster starts a cluster (it was --cluster, which the commands that
connect read as "force a cluster client"; --cluster still starts one, with a
notice on standard error).

` + fmt.Sprintf(`Ceilings: at most %d primaries, %d replicas per primary and %d nodes in all;
--port-base from 1024, leaving room for every node (and, for a cluster, its
bus port PORT+10000). --start-timeout bounds the whole start, cluster
formation included.`, sandbox.MaxPrimaries, sandbox.MaxReplicas, sandbox.MaxNodes) + `

--server-arg passes options to every server, read as redis-server reads its
command line. Options that would break the sandbox's ownership or safety are
refused (exit 2): ` + wrap(strings.Join(sandbox.RefusedArgs(), ", ")+".", 78) + `
A server that exits at start is reported with its own last log line.

Directories named ratelimit-sandbox-* in the temporary directory that a
killed run left behind (owner process dead, no server running) are removed
at the next start.`,
		Example: `  # one standalone server until Ctrl-C
  ratelimit sandbox

  # a 3-primary cluster for 20 seconds
  ratelimit sandbox --topology cluster --duration 20s

  # room for 'ratelimit race --concurrency 10000'
  ratelimit sandbox --server-arg=--maxclients --server-arg=20000

  # in another terminal, with the URL the sandbox printed
  ratelimit race --redis redis://127.0.0.1:PORT

  # a script: start in the background, read the URL from the JSON
  ratelimit sandbox -o json --duration 10m > sandbox.json &`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.ctx = c.Context()
			switch strings.ToLower(strings.TrimSpace(opts.Topology)) {
			case "standalone":
				if opts.OldCluster && c.Flags().Changed("topology") {
					return exitcode.Usagef("--cluster (now --topology cluster) contradicts --topology standalone")
				}
				opts.Cluster = opts.OldCluster
			case "cluster":
				opts.Cluster = true
			default:
				return exitcode.Usagef("--topology %q: want standalone or cluster", opts.Topology)
			}
			if opts.OldCluster {
				fmt.Fprintln(f.IO.ErrOut, "notice: sandbox --cluster is now --topology cluster (the commands that connect read --cluster as \"force a cluster client\"); --cluster still works")
			}
			if !c.Flags().Changed("primaries") && opts.Cluster {
				opts.Primaries = 3
			}
			if c.Flags().Changed("primaries") && !opts.Cluster {
				return exitcode.Usagef("--primaries needs --topology cluster")
			}
			if run != nil {
				return run(opts)
			}
			return runSandbox(opts)
		},
	}
	c.Flags().StringVar(&opts.Topology, "topology", "standalone", "standalone (one server) or cluster")
	c.Flags().BoolVar(&opts.OldCluster, "cluster", false, "the old name of --topology cluster")
	_ = c.Flags().MarkHidden("cluster")
	c.Flags().IntVar(&opts.Primaries, "primaries", 3, "cluster primaries (with --topology cluster)")
	c.Flags().IntVar(&opts.Replicas, "replicas", 0, "replicas per primary (with --topology cluster)")
	c.Flags().IntVar(&opts.PortBase, "port-base", 0, "listen on PORT-BASE, PORT-BASE+1, ... instead of free ports")
	c.Flags().StringVar(&opts.ServerBin, "server-bin", "", "server binary (default: redis-server, else valkey-server, on PATH)")
	c.Flags().DurationVar(&opts.For, "duration", 0, "stop after this long (default: until Ctrl-C; --for is an alias)")
	aliasFlag(c.Flags(), "for", "duration")
	c.Flags().StringArrayVar(&opts.ServerArg, "server-arg", nil, "extra server argument, repeatable (e.g. --server-arg=--maxclients --server-arg=20000); options that break the sandbox are refused")
	c.Flags().DurationVar(&opts.Timeout, "start-timeout", sandbox.DefaultStartTimeout, "bound on the whole start, cluster formation included")
	// sandbox has only these formats; its own -o replaces the global one
	c.Flags().StringVarP(&f.Global.Output, "output", "o", "text", "output format: text (the URL) or json (one JSON object: url, addrs, cluster, product, dir)")
	return c
}

// runningFor says how long the sandbox stays up: "until Ctrl-C", or
// "for 20s (or until Ctrl-C)" with --duration, the duration without zero
// trailing units ("1m", not "1m0s").
func runningFor(d time.Duration) string {
	if d <= 0 {
		return "until Ctrl-C"
	}
	s := d.String()
	for _, zero := range []string{"0s", "0m"} {
		if strings.HasSuffix(s, "m"+zero) || strings.HasSuffix(s, "h"+zero) {
			s = strings.TrimSuffix(s, zero)
		}
	}
	return "for " + s + " (or until Ctrl-C)"
}

// wrap breaks text into lines of at most width columns at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(text) {
		if col > 0 && col+1+len(w) > width {
			b.WriteByte('\n')
			col = 0
		} else if col > 0 {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// sandboxDoc is the start-up line of a sandbox: where it listens. It is
// no result (report does not read it), so it has no envelope but its kind
// and version.
type sandboxDoc struct {
	Kind    string   `json:"kind"`
	Version int      `json:"version"`
	URL     string   `json:"url"`
	Addrs   []string `json:"addrs"`
	Cluster bool     `json:"cluster"`
	Product string   `json:"product"`
	Dir     string   `json:"dir"`
}

func runSandbox(opts *sandboxOptions) error {
	f := opts.f
	format, err := f.Format()
	if err != nil {
		return err
	}
	if opts.For < 0 {
		return exitcode.Usagef("--duration must not be negative")
	}
	if opts.Timeout <= 0 {
		return exitcode.Usagef("--start-timeout must be positive, got %s", opts.Timeout)
	}
	primaries := 0
	if opts.Cluster {
		primaries = opts.Primaries
	} else if opts.Replicas > 0 {
		return exitcode.Usagef("--replicas needs --topology cluster")
	}
	if opts.Cluster && primaries < 3 {
		return exitcode.Usagef("--primaries must be at least 3 for a cluster, got %d", primaries)
	}
	cfg := sandbox.Config{Bin: opts.ServerBin, Primaries: primaries, Replicas: opts.Replicas, PortBase: opts.PortBase, Args: opts.ServerArg, StartTimeout: opts.Timeout}
	if err := cfg.Validate(); err != nil {
		return exitcode.UsageError(err)
	}
	sb, err := sandbox.Start(opts.ctx, cfg)
	if err != nil {
		switch {
		case errors.Is(err, sandbox.ErrNoServer) || errors.Is(err, sandbox.ErrConfig):
			return exitcode.UsageError(err)
		case opts.ctx.Err() != nil:
			return opts.ctx.Err()
		case errors.Is(err, sandbox.ErrTimeout):
			return exitcode.UnreachableError(err)
		}
		return fmt.Errorf("start sandbox: %w", err)
	}
	defer sb.Stop()
	if format == "json" {
		if err := report.JSON(f.IO.Out, sandboxDoc{
			Kind: "sandbox", Version: 1,
			URL: sb.URL, Addrs: sb.Addrs, Cluster: sb.Cluster, Product: sb.Product, Dir: sb.Dir,
		}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(f.IO.Out, sb.URL)
		what := "standalone " + sb.Product
		if sb.Cluster {
			what = fmt.Sprintf("%s cluster: %d primaries, %d replicas each (%d nodes)", sb.Product, primaries, opts.Replicas, len(sb.Nodes))
		}
		fmt.Fprintf(f.IO.ErrOut, "sandbox: %s on %v; data in %s; running %s\n", what, sb.Addrs, sb.Dir, runningFor(opts.For))
		fmt.Fprintf(f.IO.ErrOut, "sandbox: use it with --redis %s\n", sb.URL)
	}
	var timer <-chan time.Time
	if opts.For > 0 {
		timer = time.After(opts.For)
	}
	select {
	case <-opts.ctx.Done():
	case <-timer:
	}
	if err := sb.Stop(); err != nil {
		return fmt.Errorf("stop sandbox: %w", err)
	}
	if format == "text" {
		fmt.Fprintln(f.IO.ErrOut, "sandbox: stopped, temp dir removed")
	}
	return nil
}
