package redisconn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestURLWithoutHostRefused pins that a URL the user gave but that names
// no host (unset variables) is bad input before any connection: go-redis
// would fill in localhost:6379. The default is pointed at a live server so
// that a fallback to it would connect and the test would fail.
func TestURLWithoutHostRefused(t *testing.T) {
	live := redistest.StandaloneSandbox(t).URL
	for _, u := range []string{"redis://:", "redis://", "redis:///0", "redis:x", "rediss://", "redis://:6380", "redis://127.0.0.1:",
		"unix://", "unix:", "unix://redis.sock", "   ", ""} {
		for _, src := range []string{"--redis", "REDIS_URL"} {
			var notice bytes.Buffer
			opts := redisconn.WithDefault(redisconn.Options{URL: u, Source: src, Notice: &notice}, live, time.Second)
			if err := redisconn.Check(opts); exitcode.Code(err) != exitcode.Usage {
				// Open would let go-redis dial localhost:6379: never try
				t.Errorf("Check(%q from %s) = %v, want exit 2", u, src, err)
				continue
			}
			c, err := redisconn.Open(context.Background(), opts)
			if err == nil {
				c.Close()
				t.Errorf("Open(%q from %s) connected to %s, want exit 2", u, src, c.Server.Addr)
				continue
			}
			if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), src) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Open(%q from %s) = %v (code %d), want one exit-2 line naming %s", u, src, err, exitcode.Code(err), src)
			}
			if notice.Len() != 0 {
				t.Errorf("Open(%q) printed notice %q, want none", u, notice.String())
			}
		}
	}
}

func TestBadPortAndDatabase(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	host := strings.TrimPrefix(sb.URL, "redis://")
	for _, u := range []string{"redis://127.0.0.1:99999", "redis://127.0.0.1:0", "redis://127.0.0.1:65536/0", "redis://" + host + "/-1", "redis://" + host + "/0?db=-3", "redis://" + host + "/1/2"} {
		if err := redisconn.Check(redisconn.Options{URL: u}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Check(%q) = %v, want exit 2", u, err)
		}
	}
	// the server has 16 databases: SELECT 99 is "ERR DB index is out of range"
	_, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://" + host + "/99", Source: "REDIS_URL"})
	if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "database 99") || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("Open(/99) = %v (code %d), want exit 2 naming database 99 and REDIS_URL", err, exitcode.Code(err))
	}
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://" + host + "/15"})
	if err != nil {
		t.Fatalf("Open(/15): %v", err)
	}
	c.Close()
	if err := redisconn.Check(redisconn.Options{URL: sb.URL, Timeout: -time.Second}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("Check(timeout -1s) = %v, want exit 2", err)
	}
}

// TestMalformedURLsNeverShowPassword covers URLs that do not parse, or
// parse into something else, with a password in them.
func TestMalformedURLsNeverShowPassword(t *testing.T) {
	const pw = "S3cr3tPW"
	for _, u := range []string{
		"ops:" + pw + "@127.0.0.1:16506",
		pw + "@127.0.0.1:16506",
		"redis:/:" + pw + "@127.0.0.1:1",
		"redis:" + pw + "@127.0.0.1:1",
		"redis://ops:" + pw + "@127.0.0.1:99999",
		"redis://ops:" + pw + "@127.0.0.1:1/x",
		"redis://ops:" + pw + "@[::1",
		"redis://ops:p/" + pw + "@127.0.0.1:1",
		"redis://ops:" + pw + "@127.0.0.1:1/0?password=" + pw + "&dial_timeout=x",
		"redis://" + pw + "@127.0.0.1:1/0?bogus=1",
		"http://ops:" + pw + "@127.0.0.1:1",
		"unix://ops:" + pw + "@",
	} {
		if r := redisconn.Redact(u); strings.Contains(r, pw) {
			t.Errorf("Redact(%q) = %q shows the password", u, r)
		}
		opts := redisconn.Options{URL: u, Source: "--redis", Timeout: 300 * time.Millisecond}
		if err := redisconn.Check(opts); exitcode.Code(err) != exitcode.Usage {
			// some of these would reach localhost:6379 if accepted
			t.Errorf("Check(%q) = %v, want exit 2 before any connection", u, err)
			continue
		}
		_, err := redisconn.Open(context.Background(), opts)
		if err == nil {
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("Open(%q) = %q shows the password", u, err)
		}
		if c := exitcode.Code(err); c != exitcode.Usage {
			t.Errorf("Open(%q) code %d, want 2 (%v)", u, c, err)
		}
	}
	// a Server built by hand never carries a password into a document
	s := redisconn.Server{Product: "redis", Mode: "standalone", Addr: "redis:" + pw + "@127.0.0.1:1"}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pw) || strings.Contains(s.String(), pw) {
		t.Errorf("Server JSON %s / String %q shows the password", b, s.String())
	}
	var back redisconn.Server
	if err := json.Unmarshal(b, &back); err != nil || back.Product != "redis" || back.Mode != "standalone" {
		t.Errorf("Server JSON does not read back: %s, %v", b, err)
	}
}

// The ACL of issue 11: what a rate limiter needs, nothing to run PING or
// CLUSTER commands.
var issueACL = []string{"+evalsha", "+eval", "+script|load", "+get", "+set", "+del", "+pttl", "+time", "+info", "~rl:*", "~race:*"}

func TestConnectWithLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	st, cl := redistest.Standalone(t), redistest.Cluster(t)
	tests := []struct {
		name      string
		tg        redistest.Target
		rules     []string
		cluster   *bool
		mode      string
		version   bool
		noticeSub string
	}{
		{"standalone issue ACL", st, issueACL, nil, "standalone", true, ""},
		{"standalone without info", st, []string{"+get", "~rl:*"}, nil, "standalone", false, "unknown"},
		{"standalone without info, cluster slots allowed", st, []string{"+cluster|slots"}, nil, "standalone", false, ""},
		{"standalone nothing at all", st, nil, nil, "standalone", false, "unknown"},
		{"cluster issue ACL and cluster slots", cl, append([]string{"+cluster|slots"}, issueACL...), nil, "cluster", true, ""},
		{"cluster without info", cl, []string{"+cluster|slots", "+get", "~rl:*"}, nil, "cluster", false, ""},
		{"cluster forced without info", cl, []string{"+cluster|slots"}, new(true), "cluster", false, ""},
		{"cluster forced off without anything", cl, nil, new(false), "standalone", false, ""},
		{"cluster nothing at all", cl, nil, nil, "standalone", false, "--cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := redistest.ACLUser(t, tt.tg, tt.rules...)
			var notice bytes.Buffer
			c, err := redisconn.Open(ctx, redisconn.Options{URL: u, Cluster: tt.cluster, Notice: &notice})
			if err != nil {
				t.Fatalf("Open as user with %v: %v", tt.rules, err)
			}
			defer c.Close()
			if c.Server.Mode != tt.mode || (c.Server.Version != "") != tt.version {
				t.Errorf("Server = %+v, want mode %s, version known %v", c.Server, tt.mode, tt.version)
			}
			if tt.mode == "cluster" && c.Server.Primaries != 3 {
				t.Errorf("Primaries = %d, want 3", c.Server.Primaries)
			}
			if tt.noticeSub == "" && notice.Len() != 0 || tt.noticeSub != "" && !strings.Contains(notice.String(), tt.noticeSub) {
				t.Errorf("notice = %q, want %q", notice.String(), tt.noticeSub)
			}
			if strings.Count(notice.String(), "\n") > 1 {
				t.Errorf("notice = %q, want at most one line", notice.String())
			}
			if strings.Contains(c.Server.String(), strings.Split(strings.Split(u, "@")[0], ":")[2]) {
				t.Errorf("Server.String() = %q shows the password", c.Server.String())
			}
			// the user can do what its ACL allows, on every node
			if strings.Contains(strings.Join(tt.rules, " "), "+set") {
				for _, k := range []string{"rl:{a}:x", "rl:{b}:x", "rl:{c}:x"} {
					if err := c.Client.Set(ctx, k, "1", time.Minute).Err(); err != nil {
						t.Errorf("SET %s: %v", k, err)
					}
					redistest.Cleanup(t, tt.tg.Client, k)
				}
			}
		})
	}
}

func TestConnectRefusedByACL(t *testing.T) {
	ctx := context.Background()
	st, cl := redistest.Standalone(t), redistest.Cluster(t)
	tests := []struct {
		name    string
		tg      redistest.Target
		rules   []string
		cluster *bool
		suffix  string
		want    []string
		code    int
	}{
		// a cluster client learns the topology with CLUSTER SLOTS
		{"cluster issue ACL", cl, issueACL, nil, "", []string{"CLUSTER|SLOTS", "+cluster|slots"}, exitcode.Unreachable},
		{"cluster forced without cluster slots", cl, []string{"+info"}, new(true), "", []string{"+cluster|slots"}, exitcode.Unreachable},
		// SELECT for a database other than 0
		{"select refused", st, issueACL, nil, "/1", []string{"SELECT", "+select"}, exitcode.Unreachable},
		{"forced cluster on standalone", st, []string{"+cluster|slots"}, new(true), "", []string{"not a cluster node"}, exitcode.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := redistest.ACLUser(t, tt.tg, tt.rules...) + tt.suffix
			_, err := redisconn.Open(ctx, redisconn.Options{URL: u, Cluster: tt.cluster})
			if exitcode.Code(err) != tt.code {
				t.Fatalf("Open = %v (code %d), want exit %d", err, exitcode.Code(err), tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// a wrong password: exit 3, naming the password problem, never showing it
	for _, tg := range []redistest.Target{st, cl} {
		u := redistest.ACLUser(t, tg, issueACL...)
		user := strings.Split(strings.TrimPrefix(u, "redis://"), ":")[0]
		host := u[strings.LastIndex(u, "@")+1:]
		_, err := redisconn.Open(ctx, redisconn.Options{URL: "redis://" + user + ":Wr0ngPassw0rd@" + host, Source: "REDIS_URL"})
		if exitcode.Code(err) != exitcode.Unreachable || strings.Contains(err.Error(), "Wr0ngPassw0rd") ||
			!strings.Contains(err.Error(), "password") || !strings.Contains(err.Error(), "REDIS_URL") {
			t.Errorf("%s: wrong password = %v (code %d), want exit 3 naming the password and REDIS_URL, not showing it", tg.Name, err, exitcode.Code(err))
		}
	}
}

// TestPingRefusedStillConnects is the negative control of the ACL tests:
// the same user is refused PING by the server, so a connect that required
// PING would fail.
func TestPingRefusedStillConnects(t *testing.T) {
	st := redistest.Standalone(t)
	u := redistest.ACLUser(t, st, issueACL...)
	ro, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(ro)
	defer raw.Close()
	if err := raw.Ping(context.Background()).Err(); redisconn.Classify(err) != redisconn.NoPerm {
		t.Fatalf("PING as the issue's ACL user = %v, want NOPERM", err)
	}
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: u})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	c.Close()
}

func TestNotices(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	// rediss:// against a plain port: exit 3 saying it may not be TLS
	host := strings.TrimPrefix(sb.URL, "redis://")
	_, err := redisconn.Open(context.Background(), redisconn.Options{URL: "rediss://" + host, TLSSkipVerify: true, Timeout: time.Second})
	if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "may not speak TLS") {
		t.Errorf("rediss:// to a plain port = %v (code %d), want exit 3 saying it may not speak TLS", err, exitcode.Code(err))
	}
	// --tls-skip-verify warns once; a plain redis:// with it is refused
	var notice bytes.Buffer
	_, _ = redisconn.Open(context.Background(), redisconn.Options{URL: "rediss://" + closedAddr(t), TLSSkipVerify: true, Timeout: time.Second, Notice: &notice})
	if n := notice.String(); strings.Count(n, "\n") != 1 || !strings.Contains(n, "not verified") {
		t.Errorf("--tls-skip-verify notice = %q, want one line saying certificates are not verified", n)
	}
	// an unreachable URL names where it came from
	for _, src := range []string{"--redis", "REDIS_URL"} {
		_, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://" + closedAddr(t), Source: src, Timeout: time.Second})
		if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(err.Error(), "check "+src) {
			t.Errorf("unreachable from %s = %v, want exit 3 saying check %s", src, err, src)
		}
	}
}

// TestServerWithoutInfoSections: a server that answers INFO server and
// INFO cluster with an error (miniredis) is a standalone server, not a
// failure and not a cluster (it does answer CLUSTER SLOTS).
func TestServerWithoutInfoSections(t *testing.T) {
	m := redistest.Embedded(t)
	var notice bytes.Buffer
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: m.URL, Notice: &notice})
	if err != nil {
		t.Fatalf("Open(miniredis URL): %v", err)
	}
	defer c.Close()
	if c.IsCluster() || c.Server.Mode != "standalone" || notice.Len() != 0 {
		t.Errorf("Server = %+v, notice %q; want a standalone server and no notice", c.Server, notice.String())
	}
}

// TestRefusedURLsShowNoSecret (issue 26): an error about a URL the parser
// or go-redis refuses never shows a query value, a query option name
// that is not go-redis's own, or anything between "//" and the last '@'.
func TestRefusedURLsShowNoSecret(t *testing.T) {
	const pw = "S3cr3tPW"
	for _, tt := range []struct {
		url  string
		want string // in the error
	}{
		{"redis://127.0.0.1/0?pwd=" + pw, "query option 1 of 1 is not a go-redis option"},
		{"redis://127.0.0.1/0?" + pw + "=1", "its name is not shown"},
		{"redis://127.0.0.1/0?db=0&" + pw + "=1&x" + pw + "=2", "query options 2 and 3 of 3"},
		{"redis://127.0.0.1/0?pool_sise=" + pw, "did you mean pool_size?"},
		{"redis://127.0.0.1/0?password=" + pw, "unexpected query option password"},
		{"redis://127.0.0.1/0?dial_timeout=" + pw, "invalid dial_timeout duration"},
		{"redis://u:" + pw + " AB@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://u:" + pw + "\"AB@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://u:" + pw + "<AB@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://u:" + pw + "`AB@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://" + pw + " x@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://:" + pw, "redis://:xxxxx"}, // a password without its '@', read as a port
		{"redis://127.0.0.1/0#" + pw, "#xxxxx"},
	} {
		err := redisconn.Check(redisconn.Options{URL: tt.url, Source: "--redis"})
		if exitcode.Code(err) != exitcode.Usage {
			t.Errorf("Check(%q) = %v, want exit 2", tt.url, err)
			continue
		}
		msg := err.Error()
		for _, bad := range []string{pw, "AB@", "u:"} {
			if strings.Contains(msg, bad) {
				t.Errorf("Check(%q) = %q shows %q", tt.url, msg, bad)
			}
		}
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
			t.Errorf("Check(%q) = %q, want one line saying %q", tt.url, msg, tt.want)
		}
	}
}

// TestSizeOptionCeilings (issue 26): a pool of a billion connections was
// an out-of-memory crash; every size-like client option has a ceiling,
// refused with exit 2 naming it, before anything is allocated or dialled.
func TestSizeOptionCeilings(t *testing.T) {
	for _, opt := range []string{"pool_size", "min_idle_conns", "max_idle_conns", "max_active_conns", "max_concurrent_dials", "pipeline_pool_size"} {
		u := "redis://127.0.0.1:1/0?" + opt + "=1000000000"
		err := redisconn.Check(redisconn.Options{URL: u, Source: "--redis"})
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), opt+" is above the ceiling of 10000") {
			t.Errorf("Check(%q) = %v, want exit 2 naming %s and the ceiling 10000", u, err, opt)
		}
		ok := "redis://127.0.0.1:1/0?" + opt + "=10000"
		if err := redisconn.Check(redisconn.Options{URL: ok, Source: "--redis"}); err != nil {
			t.Errorf("Check(%q) = %v, want the ceiling itself accepted", ok, err)
		}
	}
	for _, opt := range []string{"pipeline_read_buffer_size", "pipeline_write_buffer_size"} {
		u := "redis://127.0.0.1:1/0?" + opt + "=1073741824"
		if err := redisconn.Check(redisconn.Options{URL: u}); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), opt+" is above the ceiling of 1048576") {
			t.Errorf("Check(%q) = %v, want exit 2 naming %s and the ceiling", u, err, opt)
		}
	}
}
