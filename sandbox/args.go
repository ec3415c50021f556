package sandbox

import (
	"sort"
	"strings"
)

// refusedOptions are the server options a user may not pass with
// Config.Args (--server-arg), each with the reason given when refused.
// They would let a server outlive Stop, listen beyond loopback or on
// ports the sandbox did not choose, read or write files outside the
// sandbox directory, talk to another server, or undo what the sandbox
// promises (persistence off, protected mode on, its own password, TLS
// and cluster settings).
var refusedOptions = map[string]string{
	"daemonize":                "a daemon outlives the sandbox; every server stays a child the sandbox can stop",
	"supervised":               "the sandbox supervises its servers itself",
	"pidfile":                  "it writes a file outside the sandbox directory",
	"dir":                      "data stays in the sandbox's temporary directory",
	"logfile":                  "the sandbox reads each server's log from its output",
	"include":                  "it reads configuration from files the sandbox does not own",
	"aclfile":                  "ACL SAVE would write a file outside the sandbox directory",
	"loadmodule":               "it loads code into the server",
	"enable-protected-configs": "it lets a client move dir or logfile outside the sandbox at run time",
	"sentinel":                 "the sandbox starts servers, not sentinels",
	"bind":                     "the sandbox listens on 127.0.0.1 only",
	"bind-source-addr":         "the sandbox talks over 127.0.0.1 only",
	"port":                     "the sandbox picks its ports; use --port-base",
	"tls-port":                 "the sandbox picks its ports; use --port-base",
	"cluster-port":             "the sandbox picks its ports; use --port-base",
	"unixsocket":               "it creates a socket file outside the sandbox directory",
	"protected-mode":           "the sandbox keeps protected mode on",
	"replicaof":                "a sandbox server never replicates from a server the sandbox did not start",
	"slaveof":                  "a sandbox server never replicates from a server the sandbox did not start",
	"masterauth":               "the sandbox sets replication credentials itself",
	"masteruser":               "the sandbox sets replication credentials itself",
	"requirepass":              "the sandbox sets the password itself (Config.Password)",
	"cluster-enabled":          "use --cluster",
	"cluster-config-file":      "the sandbox keeps nodes.conf in its directory",
	"save":                     "persistence stays off in a sandbox",
	"appendonly":               "persistence stays off in a sandbox",
}

// refusedPrefixes are families of options refused for the same reason.
var refusedPrefixes = []struct{ prefix, why string }{
	{"tls-", "the sandbox configures TLS itself"},
	{"cluster-announce-", "cluster nodes announce the loopback address the sandbox chose"},
	{"cluster-preferred-endpoint-type", "cluster nodes announce the loopback address the sandbox chose"},
}

// neededCommands may not be renamed away: the sandbox uses them to see
// that a server is its own and ready, and to form a cluster.
var neededCommands = map[string]bool{"ping": true, "info": true, "cluster": true, "auth": true, "hello": true}

// RefusedArgs lists, sorted, the server options CheckArgs refuses, for
// help texts: names, families as "tls-*", and refused values.
func RefusedArgs() []string {
	var out []string
	for name := range refusedOptions {
		if !strings.HasPrefix(name, "tls-") {
			out = append(out, name)
		}
	}
	for _, p := range refusedPrefixes {
		if strings.HasSuffix(p.prefix, "-") {
			out = append(out, p.prefix+"*")
		} else {
			out = append(out, p.prefix)
		}
	}
	var cmds []string
	for c := range neededCommands {
		cmds = append(cmds, strings.ToUpper(c))
	}
	sort.Strings(cmds)
	out = append(out, "user default", "rename-command "+strings.Join(cmds, "|"))
	sort.Strings(out)
	return out
}

// CheckArgs reports whether args may be passed to the servers (Config.Args,
// the CLI's --server-arg). Every option is read the way redis-server reads
// its command line: "--name value ...", or "--name value" in one argument,
// names in any case and with any quoting. It refuses options that break
// the sandbox's ownership or safety (see refusedOptions), a name that is
// empty or not an option name, a line break (which would start a second
// configuration line), a first argument that is not an option, and a lone
// "-" (configuration from standard input). The error is one line naming
// the argument.
func CheckArgs(args []string) error {
	// redis-server appends the user's arguments after the sandbox's own,
	// which end with a value, so the first one must start a new option.
	valueDone := true
	var name string
	var values []string
	check := func() error {
		if name == "" {
			return nil
		}
		return checkValues(name, values)
	}
	for i, a := range args {
		if strings.ContainsAny(a, "\n\x00") {
			return configErr("server argument %q is refused: it contains a line break or NUL, which would start another configuration line", a)
		}
		if a == "-" {
			return configErr("server argument \"-\" is refused: the sandbox does not read server configuration from standard input")
		}
		if strings.HasPrefix(a, "--") {
			// Whatever position redis-server gives it, a "--name"
			// argument is checked as an option name.
			tokens, ok := splitArgs(a[2:])
			if !ok {
				return configErr("server argument %q is refused: unbalanced quotes", a)
			}
			if len(tokens) == 0 || !isOptionName(tokens[0]) {
				return configErr("server argument %q is refused: %q is not a server option name", a, strings.Join(tokens, " "))
			}
			n := strings.ToLower(tokens[0])
			if why := refusedWhy(n); why != "" {
				return configErr("server argument %q is refused: %s", a, why)
			}
			if valueDone {
				if err := check(); err != nil {
					return err
				}
				name, values = n, tokens[1:]
				// redis-server counts the words of the whole argument:
				// a name alone waits for its value in the next one
				whole, _ := splitArgs(a)
				valueDone = len(whole) > 1
				continue
			}
		} else if i == 0 {
			if tokens, ok := splitArgs(a); ok && len(tokens) > 0 {
				if why := refusedWhy(strings.ToLower(tokens[0])); why != "" {
					return configErr("server argument %q is refused: %s", a, why)
				}
			}
			return configErr("server argument %q is refused: server options start with -- (e.g. --server-arg=--maxclients --server-arg=20000)", a)
		}
		values = append(values, a)
		valueDone = true
	}
	return check()
}

func refusedWhy(name string) string {
	if why, ok := refusedOptions[name]; ok {
		return why
	}
	for _, p := range refusedPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.why
		}
	}
	return ""
}

// checkValues refuses values that break the sandbox although the option
// itself is allowed.
func checkValues(name string, values []string) error {
	switch name {
	case "rename-command":
		if len(values) > 0 && neededCommands[strings.ToLower(values[0])] {
			return configErr("server argument --rename-command %s is refused: the sandbox needs %s", values[0], strings.ToUpper(values[0]))
		}
	case "user":
		if len(values) > 0 && strings.EqualFold(values[0], "default") {
			return configErr("server argument --user default is refused: the sandbox logs in as the default user (its password is Config.Password)")
		}
	}
	return nil
}

// isOptionName reports whether s looks like a server configuration name:
// letters, digits and dashes.
func isOptionName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// splitArgs splits a configuration line into arguments exactly as
// redis-server's sdssplitargs does: blanks separate arguments, "double
// quotes" take \n \r \t \b \a \xHH and backslash escapes, 'single quotes'
// take \', and a closing quote must be followed by a blank or the end. It
// reports false where sdssplitargs fails (unbalanced quotes).
func splitArgs(line string) ([]string, bool) {
	// a C string ends at its first NUL
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	var out []string
	p := 0
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return out, true
		}
		var cur strings.Builder
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur.WriteByte(unhex(at(p+2))<<4 | unhex(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch e := at(p); e {
					case 'n':
						cur.WriteByte('\n')
					case 'r':
						cur.WriteByte('\r')
					case 't':
						cur.WriteByte('\t')
					case 'b':
						cur.WriteByte('\b')
					case 'a':
						cur.WriteByte('\a')
					default:
						cur.WriteByte(e)
					}
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur.WriteByte(c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					cur.WriteByte('\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur.WriteByte(c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur.WriteByte(c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		out = append(out, cur.String())
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
