// Package cmd holds one file per ratelimit subcommand. Each file parses
// flags into an options struct and calls a domain package; no logic lives
// here beyond wiring.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/version"
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
		if f.Args == nil {
			f.Args = args
		}
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetIn(f.IO.In)
	started := false
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		started = true
		f.formats = commandFormats[c.Name()]
		if err := notOffered(c); err != nil {
			return err
		}
		if usesRedis(c) && c.Flags().Changed("cluster") {
			v, _ := c.Flags().GetBool("cluster")
			f.Global.Cluster = &v
		}
		return f.checkGlobal(c.Flags().Changed("redis"))
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(f.IO.ErrOut, "error: internal error: "+terminalSafe(secret.Redact(oneLine(fmt.Sprint(r))))+"; please report it")
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
		err = exitcode.UsageError(suggest(root, err))
	}
	printError(f.IO.ErrOut, cmd, err)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return exitcode.Interrupted
	}
	return exitcode.Code(err)
}

func printError(w io.Writer, cmd *cobra.Command, err error) {
	msg := oneLine(err.Error())
	if errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	if exitcode.Code(err) == exitcode.Failed {
		// the exit code says a check failed; the line names which, once
		msg = strings.TrimSuffix(msg, ": "+exitcode.ErrCheckFailed.Error())
	}
	if exitcode.Code(err) == exitcode.Usage && cmd != nil {
		msg += fmt.Sprintf(" (see '%s --help')", cmd.CommandPath())
	}
	// the last line of defence: whatever a library echoed, no password
	// and no control byte (an ANSI escape in a key name or a server's
	// reply) reaches the terminal
	fmt.Fprintln(w, "error: "+terminalSafe(secret.Redact(msg)))
}

// oneLine joins the non-blank lines of msg with "; ".
func oneLine(msg string) string {
	var lines []string
	for l := range strings.Lines(msg) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// terminalSafe escapes the control characters of s (C0 including tab and
// ESC, DEL, C1, and bytes 0x80-0x9f that are not part of valid UTF-8,
// which 8-bit terminals read as C1) so that printing s cannot move the
// cursor, change colours or retitle the window. Printable text, valid
// UTF-8 or not, is left alone.
func terminalSafe(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == 0xc2 || c >= 0x80 && c <= 0x9f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if c := s[i]; c >= 0x80 && c <= 0x9f {
				fmt.Fprintf(&b, `\x%02x`, c)
			} else {
				b.WriteByte(c)
			}
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

var unknownCommand = regexp.MustCompile(`^unknown command ("(?:[^"\\]|\\.)*") for ("(?:[^"\\]|\\.)*")`)

// suggest rewrites cobra's "unknown command" error (whose suggestions
// span several lines) as one line: unknown command "raec" for
// "ratelimit"; did you mean "race"?
func suggest(root *cobra.Command, err error) error {
	m := unknownCommand.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	name, err1 := strconv.Unquote(m[1])
	path, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return err
	}
	parent := root
	if rest := strings.Fields(path); len(rest) > 1 {
		if c, _, ferr := root.Find(rest[1:]); ferr == nil {
			parent = c
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, path)
	var quoted []string
	for _, s := range parent.SuggestionsFor(name) {
		quoted = append(quoted, strconv.Quote(s))
	}
	switch len(quoted) {
	case 0:
	case 1:
		msg += "; did you mean " + quoted[0] + "?"
	default:
		msg += "; did you mean one of " + strings.Join(quoted, ", ") + "?"
	}
	return errors.New(msg)
}

// redisCommands are the commands that connect to Redis: only they offer
// --redis, --tls-*, --cluster and --redis-timeout. A command that never
// connects does not take them (load names its faults' server with
// --fault-redis), so a --redis given to it is an error, not ignored.
var redisCommands = []string{"eval", "race", "keyslot", "serve", "failover"}

// redisFlagNames are the connection's flags.
var redisFlagNames = []string{"redis", "tls-ca", "tls-cert", "tls-key", "tls-skip-verify", "cluster", "redis-timeout"}

func usesRedis(c *cobra.Command) bool { return slices.Contains(redisCommands, c.Name()) }

// notOffered refuses a connection flag given to a command that connects
// to no Redis (exit 2), before it runs: the flag would be ignored. A
// command's own flag of the same name (sandbox's old --cluster) is its own.
func notOffered(c *cobra.Command) error {
	if usesRedis(c) || c.Root() == c {
		return nil
	}
	for _, name := range redisFlagNames {
		fl := c.Flags().Lookup(name)
		if fl == nil || !fl.Changed || fl != c.Root().PersistentFlags().Lookup(name) {
			continue
		}
		if c.Name() == "sandbox" {
			return exitcode.Usagef("sandbox starts its own servers and connects to none; drop --%s (pass the printed URL as --redis to the other commands)", name)
		}
		why := "it connects to no Redis"
		if c.Name() == "load" {
			why += " (faults name theirs with --fault-redis)"
		}
		return exitcode.Usagef("%s does not take --%s: %s; drop it (the commands that do: %s)", c.Name(), name, why, strings.Join(redisCommands, ", "))
	}
	return nil
}

// NewRootCmd builds the command tree with its persistent flags.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "ratelimit",
		Short: "Test Redis-backed rate limiters before you trust them in production",
		Long: `ratelimit tests rate limiters that run as Lua scripts on Redis, Redis Cluster
or Valkey, and the HTTP services in front of them.

The commands that talk to Redis (` + strings.Join(redisCommands, ", ") + `) take --redis, --tls-*,
--cluster and --redis-timeout; the others do not offer them. Redis is taken
from --redis, else REDIS_URL, else redis://localhost:6379/0 if something
answers there, else an embedded in-process server (miniredis).
--redis embedded always takes the embedded server, whatever else runs here.

Start with: ratelimit race --redis embedded (the README has one recipe per
journey: eval and race --script, keyslot, load, probe, load --fault, report
--from).

Exit codes: 0 ok, 1 a check or verdict failed, 2 usage or bad input,
3 Redis or the target unreachable, 4 internal error (a bug in ratelimit),
130 interrupted (Ctrl-C).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	// run writes its own one-line suggestion (see suggest)
	root.DisableSuggestions = true
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exitcode.UsageError(err) })
	g := f.Global
	pf := root.PersistentFlags()
	pf.StringVar(&g.RedisURL, "redis", "", "Redis URL: redis://[user:pass@]host:port/db, rediss://..., unix:///path or 'embedded' (default $REDIS_URL, else localhost:6379, else embedded)")
	pf.StringVar(&g.TLSCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (rediss://)")
	pf.StringVar(&g.TLSCert, "tls-cert", "", "PEM client certificate for mutual TLS (rediss://)")
	pf.StringVar(&g.TLSKey, "tls-key", "", "PEM client key for mutual TLS (rediss://)")
	pf.BoolVar(&g.TLSSkipVerify, "tls-skip-verify", false, "do not verify the server's certificate (rediss://; testing only)")
	pf.Bool("cluster", false, "force a cluster client (true) or a single-node client (false); detected from INFO cluster when not given")
	pf.StringVarP(&g.Output, "output", "o", "text", "output format (see each command's --help for the formats it has)")
	pf.BoolVar(&g.NoColor, "no-color", false, "disable colour (NO_COLOR is honoured too)")
	pf.DurationVar(&g.RedisTimeout, "redis-timeout", g.RedisTimeout, "timeout for dialling and for each Redis command (positive, e.g. 500ms)")
	addCommands(root, f)
	// a command that connects to no Redis does not list the connection's
	// flags in its help (notOffered refuses them)
	for _, c := range root.Commands() {
		if usesRedis(c) {
			continue
		}
		help := c.HelpFunc()
		c.SetHelpFunc(func(c *cobra.Command, args []string) {
			var hidden []*pflag.Flag
			for _, name := range redisFlagNames {
				if fl := root.PersistentFlags().Lookup(name); fl != nil && !fl.Hidden {
					fl.Hidden = true
					hidden = append(hidden, fl)
				}
			}
			defer func() {
				for _, fl := range hidden {
					fl.Hidden = false
				}
			}()
			help(c, args)
		})
	}
	root.SetUsageTemplate(withoutExamples(withFormats(root.UsageTemplate())))
	root.SetHelpTemplate(helpTemplate)
	root.Version = version.Get().String()
	root.SetVersionTemplate("{{.Version}}\n")
	return root
}

// commandFormats are the -o formats of each command, the first its
// default. addCommands puts them in each command's help (the "formats"
// annotation) and Factory.Format accepts exactly them, so the help and the
// behaviour cannot disagree. A command that adds a format adds it here.
var commandFormats = map[string][]string{
	"sandbox":    {"text", "json"},
	"race":       {"text", "json", "markdown", "junit"},
	"serve":      {"text"},
	"keyslot":    {"text", "json", "markdown", "junit", "github"},
	"eval":       {"text", "json", "markdown"},
	"scripts":    {"text", "json", "markdown"},
	"load":       {"text", "json", "markdown", "junit"},
	"probe":      {"text", "json", "markdown", "junit", "github"},
	"failover":   {"text", "json", "markdown", "junit", "github"},
	"init":       {"text"},
	"check":      {"text", "json", "markdown", "junit", "github"},
	"merge":      {"text", "json", "markdown", "junit"},
	"report":     {"text", "json", "markdown", "junit", "github", "html"},
	"version":    {"text", "json"},
	"completion": {"text"},
}

// formatsAnnotation is the cobra.Command annotation that lists a command's
// -o formats, shown in its help by the usage template.
const formatsAnnotation = "formats"

// withFormats adds an "Output formats" line after the flags of a usage
// template, for commands that carry the formats annotation.
func withFormats(tmpl string) string {
	const line = `{{with .Annotations}}{{with .formats}}

Output formats (-o, --output): {{.}}{{end}}{{end}}`
	const anchor = "{{if .HasHelpSubCommands}}"
	if i := strings.Index(tmpl, anchor); i >= 0 {
		return tmpl[:i] + line + tmpl[i:]
	}
	return strings.TrimRight(tmpl, "\n") + line + "\n"
}

// helpTemplate is each command's --help: the one-line summary, the
// examples (so what to type comes first), the long description, then the
// usage line and the flags.
const helpTemplate = `{{with .Short}}{{. | trimTrailingWhitespaces}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{with .Long}}

{{. | trimTrailingWhitespaces}}{{end}}

{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}`

// withoutExamples removes the examples from a usage template: the help
// template shows them first.
func withoutExamples(tmpl string) string {
	const examples = "{{if .HasExample}}\n\nExamples:\n{{.Example}}{{end}}"
	return strings.Replace(tmpl, examples, "", 1)
}

// addCommands registers the subcommands, one line each, and annotates
// each with its formats from commandFormats.
func addCommands(root *cobra.Command, f *Factory) {
	defer func() {
		for _, c := range root.Commands() {
			if formats, ok := commandFormats[c.Name()]; ok {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations[formatsAnnotation] = strings.Join(formats, ", ")
			}
		}
	}()
	root.AddCommand(newSandboxCmd(f, nil))
	root.AddCommand(newRaceCmd(f, nil))
	root.AddCommand(newServeCmd(f, nil))
	root.AddCommand(newKeyslotCmd(f, nil))
	root.AddCommand(newEvalCmd(f, nil))
	root.AddCommand(newScriptsCmd(f, nil))
	root.AddCommand(newLoadCmd(f, nil))
	root.AddCommand(newProbeCmd(f, nil))
	root.AddCommand(newFailoverCmd(f, nil))
	root.AddCommand(newInitCmd(f, nil))
	root.AddCommand(newCheckCmd(f, nil))
	root.AddCommand(newMergeCmd(f, nil))
	root.AddCommand(newReportCmd(f, nil))
	root.AddCommand(newVersionCmd(f, nil))
	root.AddCommand(newCompletionCmd(f, nil))
}
