package redisconn_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// FuzzCheck: any --redis value is accepted or refused with exit 2, on one
// line, without panicking; an accepted URL never silently means
// localhost:6379.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"redis://:", "redis://", "redis:///0", "redis:x", "redis://h:1/0", "rediss://h", "unix:///tmp/r.sock",
		"ops:pw@127.0.0.1:1", "redis:/:pw@h:1", "redis://h:99999", "redis://h/-1", "embedded", "  ", "redis://[::1]:7000/3?dial_timeout=1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := redisconn.Check(redisconn.Options{URL: s, Source: "--redis"})
		if err != nil {
			if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Check(%q) = %v (code %d), want one exit-2 line", s, err, exitcode.Code(err))
			}
			return
		}
		s = strings.TrimSpace(s)
		if s == redisconn.EmbeddedURL {
			return
		}
		ro, perr := redis.ParseURL(s)
		if perr != nil {
			t.Fatalf("Check(%q) accepted what go-redis refuses: %v", s, perr)
		}
		if ro.Network == "tcp" && strings.HasPrefix(ro.Addr, "localhost:") && !strings.Contains(strings.ToLower(s), "localhost") {
			t.Fatalf("Check(%q) accepted a URL go-redis completes to %s", s, ro.Addr)
		}
	})
}

// FuzzPasswordNotShown: a password in userinfo never appears in the error
// or the redacted URL, whatever surrounds it.
func FuzzPasswordNotShown(f *testing.F) {
	f.Add("redis://", "ops", "S3cr3tPW", "127.0.0.1:1")
	f.Add("", "ops", "S3cr3tPW", "127.0.0.1:16506")
	f.Add("redis:/", "", "S3cr3tPW", "127.0.0.1:1")
	f.Add("redis:", "", "S3cr3tPW", "127.0.0.1:1/99")
	f.Add("rediss://", "u", "S3cr3tPW", "[::1:99999")
	// found in CI: the parser reads "@0" as the authority, the rest as a fragment
	f.Add("//@0#", "", "000000", "0")
	// go-redis echoed the query option name "?:000000@0" in its error
	f.Add("redis://", "@@0?", "000000", "0")
	f.Fuzz(func(t *testing.T, scheme, user, pw, rest string) {
		if len(pw) < 6 || strings.ContainsAny(pw, " \t\r\n\"'`<>@:/?#&;=%[]\\") || strings.ContainsAny(scheme+user+rest, " \t\r\n\"'`<>") {
			return
		}
		raw := scheme + user + ":" + pw + "@" + rest
		if strings.Count(raw, pw) != 1 || strings.ContainsFunc(raw, unicode.IsControl) {
			return // the password is also someone else's text
		}
		if r := redisconn.Redact(raw); strings.Contains(r, pw) {
			t.Fatalf("Redact(%q) = %q shows the password", raw, r)
		}
		err := redisconn.Check(redisconn.Options{URL: raw, Source: "--redis"})
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("Check(%q) = %q shows the password", raw, err)
		}
	})
}

// FuzzRefusedURLShowsNoQuery (issue 26): an error about a Redis URL never
// shows a query value, nor a query option name go-redis does not take.
func FuzzRefusedURLShowsNoQuery(f *testing.F) {
	f.Add("pwd", "S3cr3tPW", "")
	f.Add("S3cr3tPW", "1", "&db=0")
	f.Add("dial_timeout", "S3cr3tPW", "")
	f.Add("pool_size", "S3cr3tPW", "&x=1")
	f.Fuzz(func(t *testing.T, name, value, rest string) {
		raw := "redis://127.0.0.1:1/0?" + name + "=" + value + rest
		if strings.ContainsAny(name+value, "&;#=%+") || strings.ContainsFunc(raw, unicode.IsControl) || strings.Contains(rest, "#") {
			return
		}
		err := redisconn.Check(redisconn.Options{URL: raw, Source: "--redis"})
		if err == nil {
			return
		}
		msg := err.Error()
		if len(value) >= 6 && strings.Count(raw, value) == 1 && !strings.Contains("redis://127.0.0.1:1/0? --redis URL", value) && strings.Contains(msg, value) {
			t.Fatalf("Check(%q) = %q shows the query value", raw, msg)
		}
		if len(name) >= 6 && strings.Count(raw, name) == 1 && strings.Contains(msg, name) && !redisconn.Showable(name) {
			// unless the message says it anyway (a word of its own)
			other := redisconn.Check(redisconn.Options{URL: strings.Replace(raw, name, "zqzqzq", 1), Source: "--redis"})
			if other == nil || !strings.Contains(other.Error(), name) {
				t.Fatalf("Check(%q) = %q names %q, which is not go-redis's", raw, msg, name)
			}
		}
	})
}
