// Package cmd holds one file per ratelimit subcommand. Each file parses
// flags into an options struct and calls a domain package; no logic lives
// here beyond wiring.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// Execute runs the root command with os.Args and returns the exit code.
func Execute(ctx context.Context) int {
	f := NewFactory()
	return run(ctx, f, nil)
}

// run executes the command tree for f with args (nil means os.Args) and
// maps the outcome to an exit code, printing one error line on ErrOut.
func run(ctx context.Context, f *Factory, args []string) (code int) {
	defer f.Close()
	root := NewRootCmd(f)
	if args != nil {
		root.SetArgs(args)
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetIn(f.IO.In)
	started := false
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		started = true
		if c.Flags().Changed("cluster") {
			v, _ := c.Flags().GetBool("cluster")
			f.Global.Cluster = &v
		}
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(f.IO.ErrOut, "error: internal error: %v; please report it\n", r)
			code = exitcode.Internal
		}
	}()
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitcode.OK
	}
	if !started {
		// Cobra failed before any command ran: unknown command or flag,
		// wrong number of arguments, a flag value that does not parse.
		err = exitcode.UsageError(err)
	}
	printError(f.IO.ErrOut, cmd, err)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return exitcode.Interrupted
	}
	return exitcode.Code(err)
}

func printError(w io.Writer, cmd *cobra.Command, err error) {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	if errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	if exitcode.Code(err) == exitcode.Usage && cmd != nil {
		msg += fmt.Sprintf(" (see '%s --help')", cmd.CommandPath())
	}
	// the last line of defence: whatever a library echoed, no password
	// reaches the terminal
	fmt.Fprintln(w, "error: "+secret.Redact(msg))
}

// NewRootCmd builds the command tree with its persistent flags.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "ratelimit",
		Short: "Test Redis-backed rate limiters before you trust them in production",
		Long: `ratelimit tests rate limiters that run as Lua scripts on Redis, Redis Cluster
or Valkey, and the HTTP services in front of them.

Redis is taken from --redis, else REDIS_URL, else redis://localhost:6379/0 if
something answers there, else an embedded in-process server (miniredis).

Exit codes: 0 ok, 1 a check or verdict failed, 2 usage or bad input,
3 Redis or the target unreachable, 4 internal error (a bug in ratelimit),
130 interrupted (Ctrl-C).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exitcode.UsageError(err) })
	g := f.Global
	pf := root.PersistentFlags()
	pf.StringVar(&g.RedisURL, "redis", "", "Redis URL: redis://[user:pass@]host:port/db, rediss://..., unix:///path or 'embedded' (default $REDIS_URL, else localhost:6379, else embedded)")
	pf.StringVar(&g.TLSCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (rediss://)")
	pf.StringVar(&g.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS (rediss://)")
	pf.StringVar(&g.TLSKey, "tls-key", "", "PEM client key for mutual TLS (rediss://)")
	pf.BoolVar(&g.TLSSkipVerify, "tls-skip-verify", false, "do not verify the server's certificate (rediss://; testing only)")
	pf.Bool("cluster", false, "force a cluster client (true) or a single-node client (false); detected from INFO cluster when not given")
	pf.StringVarP(&g.Output, "output", "o", "text", "output format: text, json, markdown; race, load and keyslot add junit, keyslot adds github")
	pf.BoolVar(&g.NoColor, "no-color", false, "disable colour (NO_COLOR is honoured too)")
	pf.DurationVar(&g.RedisTimeout, "redis-timeout", g.RedisTimeout, "timeout for dialling and for each Redis command")
	addCommands(root, f)
	return root
}

// addCommands registers the subcommands, one line each.
func addCommands(root *cobra.Command, f *Factory) {
	root.AddCommand(newSandboxCmd(f, nil))
	root.AddCommand(newRaceCmd(f, nil))
	root.AddCommand(newServeCmd(f, nil))
	root.AddCommand(newKeyslotCmd(f, nil))
	root.AddCommand(newEvalCmd(f, nil))
	root.AddCommand(newScriptsCmd(f, nil))
	root.AddCommand(newLoadCmd(f, nil))
	root.AddCommand(newReportCmd(f, nil))
}
