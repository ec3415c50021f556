package cmd

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestHelpListsCommandsWithExamples(t *testing.T) {
	tf := newTestFactory(t)
	root := NewRootCmd(tf.Factory)
	if len(root.Commands()) == 0 {
		t.Fatal("no subcommands registered")
	}
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("ratelimit %s has no Example in its --help", c.Name())
		}
		if c.Short == "" {
			t.Errorf("ratelimit %s has no short description", c.Name())
		}
	}
	if code := tf.execute(t, "--help"); code != exitcode.OK {
		t.Fatalf("--help exit = %d", code)
	}
	for _, c := range root.Commands() {
		if !c.Hidden && !strings.Contains(tf.Out.String(), "  "+c.Name()+" ") {
			t.Errorf("ratelimit --help does not list %s:\n%s", c.Name(), tf.Out.String())
		}
	}
}

// TestHelpListsVersionAndCompletion: the root help offers the version and
// completion commands (each with an Example, as checked above).
func TestHelpListsVersionAndCompletion(t *testing.T) {
	tf := newTestFactory(t)
	if code := tf.execute(t, "--help"); code != exitcode.OK {
		t.Fatalf("--help exit = %d", code)
	}
	for _, name := range []string{"version", "completion"} {
		if !strings.Contains(tf.Out.String(), "\n  "+name+" ") {
			t.Errorf("ratelimit --help does not list %s:\n%s", name, tf.Out.String())
		}
	}
}

// formatProbeArgs end each command quickly, without Redis or a network,
// just after it checked -o: a later flag is invalid, or the command works
// offline.
var formatProbeArgs = map[string][]string{
	"race":       {"--watch-attempts", "0"},
	"sandbox":    {"--for", "-1s"},
	"serve":      {"--key-prefix="},
	"eval":       {"--count", "0"},
	"keyslot":    {"rl:{a}:x"},
	"load":       {"--duration", "0"},
	"probe":      {"http://127.0.0.1:1/", "--timeout", "0"},
	"failover":   {"--trials", "0"},
	"check":      {"/nonexistent/ratelimit.yaml"},
	"init":       {"http://127.0.0.1:1/", "--workflow", "none"},
	"merge":      {},
	"report":     {},
	"scripts":    {},
	"version":    {},
	"completion": {"bash"},
}

// TestHelpFormatsMatchBehaviour: for every command, the formats its help
// lists are exactly the -o values it accepts (before the fix the global -o
// help offered markdown to serve and sandbox, which refuse it).
func TestHelpFormatsMatchBehaviour(t *testing.T) {
	all := []string{"text", "json", "markdown", "junit", "github", "html"}
	root := NewRootCmd(newTestFactory(t).Factory)
	for _, c := range root.Commands() {
		name := c.Name()
		if name == "help" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			formats, ok := commandFormats[name]
			if !ok {
				t.Fatalf("%s has no entry in commandFormats", name)
			}
			tf := newTestFactory(t)
			if code := tf.execute(t, name, "--help"); code != exitcode.OK {
				t.Fatalf("%s --help exit %d", name, code)
			}
			want := "\nOutput formats (-o, --output): " + strings.Join(formats, ", ") + "\n"
			if !strings.Contains(tf.Out.String(), want) {
				t.Errorf("%s --help lacks %q:\n%s", name, want, tf.Out.String())
			}
			probe, ok := formatProbeArgs[name]
			if !ok {
				t.Fatalf("no quick arguments for %s in formatProbeArgs", name)
			}
			var accepted []string
			for _, o := range all {
				tf := newTestFactory(t)
				code := tf.execute(t, append(append([]string{name}, probe...), "-o", o)...)
				refused := code == exitcode.Usage && strings.Contains(tf.ErrOut.String(), "is not supported here")
				if !refused {
					accepted = append(accepted, o)
				}
			}
			if strings.Join(accepted, ", ") != strings.Join(formats, ", ") {
				t.Errorf("%s accepts -o %v, its help lists %v", name, accepted, formats)
			}
		})
	}
	// the global flag no longer claims formats for every command
	if u := root.PersistentFlags().Lookup("output").Usage; strings.Contains(u, "markdown") {
		t.Errorf("global -o usage = %q, want it to point to each command's help", u)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},
		{"sandbox", "--no-such-flag"},
		{"sandbox", "extra-arg"},
		{"sandbox", "--for", "abc"},
		{"-o", "yaml", "sandbox"},
		{"sandbox", "--topology", "cluster", "--primaries", "2"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, args...)
		if code != exitcode.Usage {
			t.Errorf("ratelimit %v exit = %d, want 2 (stderr %q)", args, code, tf.ErrOut.String())
		}
		if lines := strings.Count(tf.ErrOut.String(), "\n"); lines != 1 || !strings.HasPrefix(tf.ErrOut.String(), "error: ") {
			t.Errorf("ratelimit %v stderr = %q, want one 'error:' line", args, tf.ErrOut.String())
		}
	}
}

func TestColor(t *testing.T) {
	tf := newTestFactory(t)
	if tf.Color() {
		t.Error("Color() on a buffer = true, want false")
	}
	tf.IO.OutTTY = true
	if !tf.Color() {
		t.Error("Color() on a terminal = false, want true")
	}
	tf.Env["NO_COLOR"] = "1"
	if tf.Color() {
		t.Error("Color() with NO_COLOR = true, want false")
	}
	delete(tf.Env, "NO_COLOR")
	tf.Global.NoColor = true
	if tf.Color() {
		t.Error("Color() with --no-color = true, want false")
	}
}

func TestRedisFromEnvAndFlag(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	tf := newTestFactory(t)
	tf.Env["REDIS_URL"] = sb.URL
	c, err := tf.Redis(t.Context())
	if err != nil {
		t.Fatalf("Redis() with REDIS_URL: %v", err)
	}
	if c.Server.Embedded || !strings.Contains(c.Server.Addr, sb.Addrs[0]) {
		t.Errorf("Redis() = %+v, want the server from REDIS_URL %s", c.Server, sb.URL)
	}
	tf2 := newTestFactory(t)
	tf2.Env["REDIS_URL"] = "redis://127.0.0.1:1"
	tf2.Global.RedisURL = "embedded"
	c2, err := tf2.Redis(t.Context())
	if err != nil || !c2.Server.Embedded {
		t.Errorf("--redis embedded must win over REDIS_URL: %+v, %v", c2, err)
	}
}

func TestInterruptedExitCode(t *testing.T) {
	redistest.Require(t)
	tf := newTestFactory(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the servers are up
	if code := run(ctx, tf.Factory, []string{"sandbox", "--topology", "cluster"}); code != exitcode.Interrupted {
		t.Errorf("sandbox interrupted while starting: exit = %d, want 130 (stderr %q)", code, tf.ErrOut.String())
	}
	if !strings.Contains(tf.ErrOut.String(), "interrupted") {
		t.Errorf("stderr = %q, want it to say interrupted", tf.ErrOut.String())
	}
}

// closedURL returns a redis:// URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "redis://" + addr + "/0"
}

// refusedOffline reports whether redisconn refuses u from src without
// connecting. Tests run a command with a URL that must be refused only
// after this check, so that a regression fails the test rather than
// letting go-redis dial localhost:6379.
func refusedOffline(t *testing.T, src, u string) bool {
	t.Helper()
	err := redisconn.Check(redisconn.Options{URL: u, Source: src})
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("%s=%q is accepted before connecting (%v), want exit 2; not running it", src, u, err)
		return false
	}
	return true
}

// withRedis returns args with the URL in --redis, or sets REDIS_URL.
func withRedis(tf *testFactory, src, u string, args ...string) []string {
	if src == "REDIS_URL" {
		tf.Env["REDIS_URL"] = u
		return args
	}
	return append([]string{"--redis", u}, args...)
}

// TestRedisURLWithoutHost: a URL that names no host (built from unset
// variables) is exit 2 before any connection. The default address points
// at a live server, so falling back to it would connect and exit 0.
func TestRedisURLWithoutHost(t *testing.T) {
	live := redistest.StandaloneSandbox(t).URL
	for _, u := range []string{"redis://:", "redis://", "redis:///0", "redis:x", "redis://127.0.0.1:", "unix://", "", "  "} {
		for _, src := range []string{"--redis", "REDIS_URL"} {
			if src == "REDIS_URL" && u == "" {
				continue // an empty REDIS_URL counts as unset
			}
			if !refusedOffline(t, src, u) {
				continue
			}
			for _, args := range [][]string{{"keyslot", "rl:{a}:x"}, {"eval", "rl:{a}:x", "--capacity", "5", "--rate", "1/s"}} {
				tf := newTestFactory(t)
				tf.DefaultRedisURL = live
				code := tf.execute(t, withRedis(tf, src, u, args...)...)
				errOut := tf.ErrOut.String()
				if code != exitcode.Usage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, src) || tf.Out.Len() != 0 {
					t.Errorf("%s=%q %v: exit %d, stderr %q, stdout %q; want exit 2, one line naming %s, no output", src, u, args, code, errOut, tf.Out.String(), src)
				}
			}
		}
	}
}

func TestBadConnectionInput(t *testing.T) {
	host := strings.TrimPrefix(redistest.StandaloneSandbox(t).URL, "redis://")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "redis://127.0.0.1:99999", "eval", "k", "--capacity", "5", "--rate", "1/s"}, "port 99999"},
		{[]string{"--redis", "redis://" + host + "/99", "eval", "k", "--capacity", "5", "--rate", "1/s"}, "database 99"},
		{[]string{"--redis-timeout", "-1s", "keyslot", "a"}, "--redis-timeout"},
		{[]string{"--redis-timeout", "0", "keyslot", "a"}, "--redis-timeout"},
		{[]string{"--redis", "ops:pw@127.0.0.1:16506", "keyslot", "a"}, "no redis:// scheme"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, tt.args...)
		if code != exitcode.Usage || !strings.Contains(tf.ErrOut.String(), tt.want) {
			t.Errorf("ratelimit %v: exit %d, stderr %q; want exit 2 naming %s", tt.args, code, tf.ErrOut.String(), tt.want)
		}
	}
}

// TestURLPasswordNeverShown runs eval, race and keyslot with URLs holding a
// password (malformed, wrong, right) in --redis and REDIS_URL, in every
// output format: the password never appears on stdout or stderr.
func TestURLPasswordNeverShown(t *testing.T) {
	const pw = "S3cr3tPW"
	st := redistest.Standalone(t)
	good := redistest.ACLUser(t, st, "+@all", "~*")
	gu, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	goodPW, _ := gu.User.Password()
	wrong := "redis://" + gu.User.Username() + ":" + pw + "@" + gu.Host
	urls := []struct {
		u, pw string
		codes []int
	}{
		{"ops:" + pw + "@127.0.0.1:16506", pw, []int{exitcode.Usage}},
		{"redis:/:" + pw + "@127.0.0.1:1", pw, []int{exitcode.Usage}},
		{"redis:" + pw + "@127.0.0.1:1", pw, []int{exitcode.Usage}},
		{"redis://ops:" + pw + "@127.0.0.1:99999", pw, []int{exitcode.Usage}},
		{"redis://:" + pw + "@" + gu.Host + "/0?password=" + pw, pw, []int{exitcode.Usage}}, // go-redis takes no password= option
		{wrong, pw, []int{exitcode.Unreachable}},
		{good, goodPW, []int{exitcode.OK, exitcode.Usage}}, // keyslot --verify on standalone is 2
	}
	cmds := []struct {
		args    []string
		formats []string
	}{
		{[]string{"keyslot", "rl:{a}:x"}, []string{"text", "json", "markdown", "junit", "github"}},
		{[]string{"keyslot", "--verify", "rl:{a}:x"}, []string{"text", "json"}},
		{[]string{"eval", redistest.Key(t, "pw"), "--capacity", "5", "--rate", "1/s"}, []string{"text", "json", "markdown"}},
		{[]string{"race", "--trials", "1", "--strategies", "script"}, []string{"text", "json", "markdown", "junit"}},
	}
	runs := 0
	for _, u := range urls {
		if containsInt(u.codes, exitcode.Usage) && u.u != good && !refusedOffline(t, "--redis", u.u) {
			continue
		}
		for _, c := range cmds {
			for _, format := range c.formats {
				for _, src := range []string{"--redis", "REDIS_URL"} {
					if u.u == good && src == "REDIS_URL" && format != "json" {
						continue // enough real runs; every format ran with --redis
					}
					tf := newTestFactory(t)
					args := withRedis(tf, src, u.u, append(append([]string{}, c.args...), "-o", format)...)
					code := tf.execute(t, args...)
					runs++
					all := tf.Out.String() + tf.ErrOut.String()
					if strings.Contains(all, u.pw) {
						t.Errorf("%s=%q %v: output shows the password:\n%s", src, u.u, args, all)
					}
					if !containsInt(u.codes, code) {
						t.Errorf("%s=%q %v: exit %d, want one of %v (stderr %q)", src, u.u, args, code, u.codes, tf.ErrOut.String())
					}
					if u.u == good && format == "json" && code == exitcode.OK && !strings.Contains(tf.Out.String(), `"addr": "redis://`+gu.User.Username()+`:xxxxx@`) {
						t.Errorf("%v: document lacks the redacted addr:\n%s", args, tf.Out.String())
					}
				}
			}
		}
	}
	t.Logf("%d runs", runs)
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestAutomaticChoiceNotice: with neither --redis nor REDIS_URL, one line
// on stderr says which server was chosen and why.
func TestAutomaticChoiceNotice(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	args := []string{"eval", redistest.Key(t, "auto"), "--capacity", "5", "--rate", "1/s", "-o", "json"}
	tf := newTestFactory(t)
	tf.DefaultRedisURL = sb.URL + "/0"
	if code := tf.execute(t, args...); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	addr := strings.TrimPrefix(sb.URL, "redis://")
	if e := tf.ErrOut.String(); strings.Count(e, "\n") != 1 || !strings.Contains(e, addr+" answered") {
		t.Errorf("stderr = %q, want one line saying %s answered", e, addr)
	}
	tf = newTestFactory(t)
	tf.DefaultRedisURL = closedURL(t)
	if code := tf.execute(t, args...); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, tf.ErrOut.String())
	}
	if e := tf.ErrOut.String(); strings.Count(e, "\n") != 1 || !strings.Contains(e, "embedded") || !strings.Contains(e, "nothing on") {
		t.Errorf("stderr = %q, want one line saying nothing answered and the embedded server is used", e)
	}
	// an explicit URL prints no notice; an unreachable one names its source
	for _, src := range []string{"--redis", "REDIS_URL"} {
		tf := newTestFactory(t)
		code := tf.execute(t, withRedis(tf, src, closedURL(t), "eval", "k", "--capacity", "5", "--rate", "1/s")...)
		if e := tf.ErrOut.String(); code != exitcode.Unreachable || !strings.Contains(e, "check "+src) || strings.Count(e, "\n") != 1 {
			t.Errorf("unreachable %s: exit %d, stderr %q; want exit 3 saying check %s", src, code, e, src)
		}
	}
}

// TestIssueACLThroughCmd: the least-privilege user of issue 11 (no
// +ping), with what the token-bucket script itself calls, runs eval on a
// standalone server and (with +cluster|slots) on a cluster.
func TestIssueACLThroughCmd(t *testing.T) {
	acl := []string{"+evalsha", "+eval", "+script|load", "+get", "+set", "+del", "+pttl", "+time", "+info", "~rl:*", "~race:*",
		"+hmget", "+hlen", "+hset", "+pexpire", "+type"}
	for _, tt := range []struct {
		tg    redistest.Target
		extra []string
		code  int
		want  string
	}{
		{redistest.Standalone(t), nil, exitcode.OK, ""},
		{redistest.Cluster(t), []string{"+cluster|slots"}, exitcode.OK, ""},
		{redistest.Cluster(t), nil, exitcode.Unreachable, "+cluster|slots"},
	} {
		u := redistest.ACLUser(t, tt.tg, append(tt.extra, acl...)...)
		tf := newTestFactory(t)
		code := tf.execute(t, "eval", "--redis", u, "rl:{"+tt.tg.Name+"}:acl", "--capacity", "5", "--rate", "1/s", "-n", "2")
		redistest.Cleanup(t, tt.tg.Client, "rl:{"+tt.tg.Name+"}:acl")
		if code != tt.code || !strings.Contains(tf.ErrOut.String(), tt.want) {
			t.Errorf("%s with %v: exit %d, stderr %q; want exit %d and %q", tt.tg.Name, tt.extra, code, tf.ErrOut.String(), tt.code, tt.want)
		}
	}
}

func TestTLSFlagsNotices(t *testing.T) {
	host := strings.TrimPrefix(redistest.StandaloneSandbox(t).URL, "redis://")
	tf := newTestFactory(t)
	code := tf.execute(t, "--redis", "rediss://"+host, "--tls-skip-verify", "--redis-timeout", "1s", "eval", "k", "--capacity", "5", "--rate", "1/s")
	e := tf.ErrOut.String()
	if code != exitcode.Unreachable || !strings.Contains(e, "not verified") || !strings.Contains(e, "may not speak TLS") || strings.Count(e, "\n") != 2 {
		t.Errorf("rediss:// to a plain port with --tls-skip-verify: exit %d, stderr %q; want the warning line and exit 3 saying it may not speak TLS", code, e)
	}
}

func TestUnknownCommandOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"raec"}, `error: unknown command "raec" for "ratelimit"; did you mean "race"? (see 'ratelimit --help')` + "\n"},
		{[]string{"evl"}, `error: unknown command "evl" for "ratelimit"; did you mean "eval"? (see 'ratelimit --help')` + "\n"},
		{[]string{"zzzzzz"}, `error: unknown command "zzzzzz" for "ratelimit" (see 'ratelimit --help')` + "\n"},
	} {
		tf := newTestFactory(t)
		if code := tf.execute(t, tt.args...); code != exitcode.Usage || tf.ErrOut.String() != tt.want {
			t.Errorf("ratelimit %v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, tf.ErrOut.String(), tt.want)
		}
	}
}

func TestErrorLineEscapesControlBytes(t *testing.T) {
	var b strings.Builder
	printError(&b, nil, errors.New("a\x1b[31mred\x1b[0m\tb\r\nc\n\nd\x7f \u0085 \x9b é 世 \xff"))
	want := `error: a\x1b[31mred\x1b[0m\tb; c; d\x7f \u0085 \x9b é 世 ` + "\xff\n"
	if b.String() != want {
		t.Errorf("printError = %q, want %q", b.String(), want)
	}
	// end to end: a URL with an OSC sequence, an unknown flag with ESC
	for _, args := range [][]string{
		{"--redis", "redis://h\x1b]0;pwned\x07:1", "keyslot", "a"},
		{"keyslot", "--\x1b[2J"},
	} {
		tf := newTestFactory(t)
		code := tf.execute(t, args...)
		if e := tf.ErrOut.String(); code != exitcode.Usage || strings.ContainsAny(e, "\x1b\x07") || strings.Count(e, "\n") != 1 {
			t.Errorf("ratelimit %q: exit %d, stderr %q; want exit 2, one line, no control bytes", args, code, e)
		}
	}
}

func FuzzErrorLine(f *testing.F) {
	for _, s := range []string{"plain", "a\x1b[31mb", "\xc2\x9b", "redis://u:pw@h", "x\r\ny", "\xff\xfe", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		printError(&b, nil, errors.New(s))
		out := strings.TrimSuffix(strings.TrimPrefix(b.String(), "error: "), "\n")
		for i := 0; i < len(out); {
			r, size := utf8.DecodeRuneInString(out[i:])
			if r == utf8.RuneError && size == 1 {
				r = rune(out[i])
			}
			if r < 0x20 || r >= 0x7f && r <= 0x9f {
				t.Fatalf("printError(%q) = %q holds control character %#x", s, b.String(), r)
			}
			i += size
		}
	})
}
