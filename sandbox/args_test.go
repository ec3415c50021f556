package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	refused := []struct {
		args []string
		name string // what the one-line error must name
	}{
		{[]string{"--daemonize", "yes"}, "--daemonize"},
		{[]string{"--daemonize yes"}, "--daemonize yes"},
		{[]string{"--DAEMONIZE", "yes"}, "--DAEMONIZE"},
		{[]string{"--DaemonIze yes"}, "--DaemonIze yes"},
		{[]string{"daemonize", "yes"}, "daemonize"},
		{[]string{"daemonize yes"}, "daemonize yes"},
		{[]string{"--daemonize"}, "--daemonize"},
		{[]string{`--"daemonize"`, "yes"}, "daemonize"},
		{[]string{`--'daemonize' yes`}, "daemonize"},
		{[]string{`--"\x64aemonize" yes`}, "aemonize"},
		{[]string{`--dae"monize"`, "yes"}, "monize"},
		// "--" alone would make the next argument the option's name
		{[]string{"--", "daemonize", "yes"}, `"--"`},
		{[]string{"--  ", "daemonize", "yes"}, "--"},
		// a line break would start a second configuration line
		{[]string{"--maxclients 10\ndaemonize yes"}, "maxclients"},
		{[]string{"--maxclients", "10", "-"}, `"-"`},
		{[]string{"--maxclients", "10", "--daemonize", "yes"}, "--daemonize"},
		// after a name without its value redis-server reads "--daemonize"
		// as that value; it is refused all the same
		{[]string{"--maxmemory-policy", "--daemonize", "yes"}, "--daemonize"},
		{[]string{"--port", "6379"}, "--port"},
		{[]string{"--tls-port", "6380"}, "--tls-port"},
		{[]string{"--tls-cert-file", "x.pem"}, "--tls-cert-file"},
		{[]string{"--bind", "0.0.0.0"}, "--bind"},
		{[]string{"--bind 0.0.0.0"}, "--bind 0.0.0.0"},
		{[]string{"--unixsocket", "/tmp/x.sock"}, "--unixsocket"},
		{[]string{"--pidfile", "/tmp/x.pid"}, "--pidfile"},
		{[]string{"--dir", "/"}, "--dir"},
		{[]string{"--logfile", "/tmp/x.log"}, "--logfile"},
		{[]string{"--cluster-enabled", "no"}, "--cluster-enabled"},
		{[]string{"--cluster-config-file", "/tmp/n.conf"}, "--cluster-config-file"},
		{[]string{"--cluster-port", "1"}, "--cluster-port"},
		{[]string{"--cluster-announce-ip", "10.0.0.1"}, "--cluster-announce-ip"},
		{[]string{"--include", "/etc/redis/redis.conf"}, "--include"},
		{[]string{"--replicaof", "prod.example", "6379"}, "--replicaof"},
		{[]string{"--slaveof", "prod.example", "6379"}, "--slaveof"},
		{[]string{"--masterauth", "x"}, "--masterauth"},
		{[]string{"--requirepass", "x"}, "--requirepass"},
		{[]string{"--protected-mode", "no"}, "--protected-mode"},
		{[]string{"--save", "60 1"}, "--save"},
		{[]string{"--save"}, "--save"},
		{[]string{"--appendonly", "yes"}, "--appendonly"},
		{[]string{"--aclfile", "/tmp/users.acl"}, "--aclfile"},
		{[]string{"--loadmodule", "/tmp/m.so"}, "--loadmodule"},
		{[]string{"--enable-protected-configs", "yes"}, "--enable-protected-configs"},
		{[]string{"--sentinel"}, "--sentinel"},
		{[]string{"--supervised", "systemd"}, "--supervised"},
		{[]string{"--rename-command", "PING", ""}, "PING"},
		{[]string{"--rename-command cluster x"}, "cluster"},
		{[]string{"--user", "default", "off"}, "default"},
		{[]string{"--maxclients", `"10`}, ""}, // a value: allowed by the checker? see below
		{[]string{`--maxclients "10`}, "unbalanced"},
		{[]string{"--max_clients", "10"}, "max_clients"},
		{[]string{"maxclients", "10"}, "start with --"},
	}
	for _, tt := range refused {
		err := CheckArgs(tt.args)
		if tt.name == "" {
			// a value with a quote is passed on quoted; redis-server reads it as text
			if err != nil {
				t.Errorf("CheckArgs(%q) = %v, want nil", tt.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckArgs(%q) = nil, want it refused", tt.args)
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckArgs(%q) = %q, want a one-line ErrConfig naming %q", tt.args, err, tt.name)
		}
	}
	allowed := [][]string{
		nil,
		{"--maxclients", "20000"},
		{"--maxclients 20000"},
		{"--MAXCLIENTS", "20000"},
		{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"},
		{"--rename-command", "CONFIG", ""},
		{"--rename-command", "FLUSHALL", ""},
		{"--user", "alice", "on", ">pw", "~*", "+@all"},
		{"--loglevel", "notice"},
		{"--io-threads", "2"},
		{"--cluster-node-timeout", "2000"},
		{"--appendfsync", "no"},
		{"--save-not-a-thing", "1"}, // not refused here; the server rejects it
	}
	for _, args := range allowed {
		if err := CheckArgs(args); err != nil {
			t.Errorf("CheckArgs(%q) = %v, want nil", args, err)
		}
	}
}

func TestSplitArgsMatchesSdssplitargs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"   ", nil, true},
		{"a b  c", []string{"a", "b", "c"}, true},
		{"\ta\r\nb", []string{"a", "b"}, true},
		{`"a b" c`, []string{"a b", "c"}, true},
		{`"\x41\x4a" 'it\'s'`, []string{"AJ", "it's"}, true},
		{`"\n\t\q"`, []string{"\n\tq"}, true},
		{`"\x4"`, []string{"x4"}, true},
		{`a"b c"`, []string{"ab c"}, true},
		{`"a"b`, nil, false},
		{`'a'b`, nil, false},
		{`"abc`, nil, false},
		{`'abc`, nil, false},
		{"a\x00b", []string{"a"}, true},
		{"\va", []string{"a"}, true},
		{"a\vb", []string{"a\vb"}, true},
	}
	for _, tt := range tests {
		got, ok := splitArgs(tt.in)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// sandboxArgv is how startNode's own arguments end: with a value.
var sandboxArgv = []string{"redis-server", "--bind", "127.0.0.1", "--loglevel", "warning"}

// redisLines replays how redis-server 7 turns its command line into
// configuration lines (main in server.c, loadServerConfigFromString in
// config.c) and returns the words of each line that the user's args
// produced, the name lower-cased. stdin reports a "-" that makes it read
// configuration from standard input; ok is false when redis-server would
// reject the configuration as a whole.
func redisLines(args []string) (lines [][]string, stdin, ok bool) {
	argv := append(slices.Clone(sandboxArgv), args...)
	var options strings.Builder
	userStart := -1
	handled := true
	for j := 1; j < len(argv); j++ {
		if j == len(sandboxArgv) {
			userStart = options.Len()
		}
		a := argv[j]
		switch {
		case a == "-" && (j == 1 || j == len(argv)-1):
			stdin = true
		case handled && strings.HasPrefix(a, "--"):
			if options.Len() > 0 {
				options.WriteString("\n")
			}
			options.WriteString(a[2:] + " ")
			words, ok := splitArgs(a)
			if ok && len(words) == 1 {
				handled = false
				if j != len(argv)-1 && strings.HasPrefix(argv[j+1], "--") &&
					(strings.EqualFold(a, "--save") || strings.EqualFold(a, "--sentinel")) {
					options.WriteString(`""`)
				}
			} else {
				handled = true
			}
		default:
			options.WriteString(repr(a) + " ")
			handled = true
		}
	}
	if userStart < 0 {
		return nil, stdin, true
	}
	for _, line := range strings.Split(options.String()[userStart:], "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		words, ok := splitArgs(line)
		if !ok {
			return nil, stdin, false
		}
		if len(words) == 0 {
			continue
		}
		words[0] = strings.ToLower(words[0])
		lines = append(lines, words)
	}
	return lines, stdin, true
}

// repr is sdscatrepr.
func repr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c <= 0x7e {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// mustNeverReach are configuration lines no accepted argument list may
// produce, listed here independently of refusedOptions.
var mustNeverReach = []string{
	"daemonize", "port", "tls-port", "bind", "unixsocket", "pidfile", "dir", "logfile",
	"cluster-enabled", "cluster-config-file", "cluster-port", "include", "replicaof", "slaveof",
	"protected-mode", "save", "appendonly", "requirepass", "masterauth", "aclfile", "loadmodule",
	"enable-protected-configs", "sentinel", "supervised", "cluster-announce-ip",
}

func TestRedisLinesReplay(t *testing.T) {
	// negative control for the fuzz property: the replay does see what
	// the checker refuses
	for _, args := range [][]string{
		{"--daemonize", "yes"},
		{"--", "daemonize", "yes"},
		{"--maxclients 1\ndaemonize yes"},
		{`--"daemonize" yes`},
	} {
		lines, _, _ := redisLines(args)
		if !slices.ContainsFunc(lines, func(w []string) bool { return w[0] == "daemonize" }) {
			t.Errorf("redisLines(%q) = %q, want a daemonize line", args, lines)
		}
	}
	lines, _, ok := redisLines([]string{"--rename-command", "CONFIG", ""})
	if !ok || len(lines) != 1 || !slices.Equal(lines[0], []string{"rename-command", "CONFIG", ""}) {
		t.Errorf("redisLines(rename-command CONFIG \"\") = %q, %v", lines, ok)
	}
}

// FuzzCheckArgs feeds CheckArgs argument lists (split at NUL, which no
// argument can hold). It must not panic, and whatever it accepts must not
// make redis-server read a refused option, a needed command renamed, the
// default user redefined or configuration from standard input.
func FuzzCheckArgs(f *testing.F) {
	for _, s := range []string{
		"--daemonize\x00yes", "--\x00daemonize\x00yes", `--"daemonize" yes`, `--'daemonize'`,
		`--"\x64aemonize"`, "--maxclients\x0020000", "--rename-command\x00PING\x00", "--save",
		"--maxclients 1\ndaemonize yes", "daemonize\x00yes", "--maxclients\x001\x00-",
		"--maxmemory-policy\x00--daemonize\x00yes", "--PORT 1", "--user default off",
		`--maxclients '1`, "--#x\x00daemonize", "-- #\x00x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if CheckArgs(args) != nil {
			return
		}
		lines, stdin, ok := redisLines(args)
		if stdin {
			t.Fatalf("CheckArgs(%q) accepted configuration from standard input", args)
		}
		if !ok {
			return // redis-server rejects it and exits at start
		}
		for _, w := range lines {
			name := w[0]
			if slices.Contains(mustNeverReach, name) || refusedWhy(name) != "" {
				t.Fatalf("CheckArgs(%q) accepted it, but redis-server reads %q", args, w)
			}
			if name == "rename-command" && len(w) > 1 && neededCommands[strings.ToLower(w[1])] {
				t.Fatalf("CheckArgs(%q) accepted renaming %s", args, w[1])
			}
			if name == "user" && len(w) > 1 && strings.EqualFold(w[1], "default") {
				t.Fatalf("CheckArgs(%q) accepted redefining the default user", args)
			}
		}
	})
}
