package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

// connectRules are what redisconn.Open asks of an ACL user today (PING,
// INFO, CLUSTER SLOTS on a cluster); serve's own needs are ACLRules.
var connectRules = []string{"+ping", "+info", "+cluster|slots"}

// aclClient connects to tg as a new ACL user with rules.
func aclClient(t *testing.T, tg redistest.Target, rules ...string) redis.UniversalClient {
	t.Helper()
	url := redistest.ACLUser(t, tg, rules...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := redisconn.Open(ctx, redisconn.Options{URL: url})
	if err != nil {
		t.Fatalf("connect as ACL user with %v: %v", rules, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn.Client
}

func without(rules []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return slices.Contains(drop, r) })
}

// minimalRules are ACLRules of a token bucket under prefix.
func minimalRules(t *testing.T, prefix string) []string {
	t.Helper()
	m, err := NewMiddleware(Config{Store: redislimit.NewStore(redis.NewClient(&redis.Options{})), Params: bucket(t, 10, "1/m"), KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return m.ACLRules()
}

// TestProbeACL: with serve's minimal ACL the probe passes, Run serves and
// limits exactly (12 requests on a bucket of 10: ten 200s, then 429s) and
// no probe key is left; a user without EVAL or EVALSHA, without a command
// the script calls, or without the key pattern is refused at start with
// exit 3 naming the rule to add. Standalone and cluster.
func TestProbeACL(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			prefix := "test-" + uuid.NewString()
			minimal := minimalRules(t, prefix)
			for _, want := range []string{"+evalsha", "+eval", "+time", "+hmget", "+hset", "+pexpire", "~" + prefix + ":*"} {
				if !slices.Contains(minimal, want) {
					t.Errorf("ACLRules() = %v, lacks %s", minimal, want)
				}
			}
			t.Run("permitted", func(t *testing.T) {
				// TYPE only names a refused key's type and DEL only replaces
				// one (Force) or ends a fixed window: a token bucket works
				// without them, and the probe key then expires by PEXPIRE.
				client := aclClient(t, tg, without(append(slices.Clone(connectRules), minimal...), "+type", "+del")...)
				// what the ACL lets the limiter decide is judged here, not
				// how fast: each decision waits for Redis however busy the
				// machine (under serve's 50 ms default deadline a late
				// decision fails open, served undecided: 11 admitted on a
				// bucket of 10 on a loaded machine), and /metrics shows
				// that every request was decided
				cfg := Config{Store: redislimit.NewStore(client), Params: bucket(t, 10, "1/m"), KeyPrefix: prefix, RedisTimeout: WaitForever}
				out := &redistest.Buffer{}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- Run(ctx, cfg, "127.0.0.1:0", out) }()
				url := waitListening(t, out, errc)
				key := "acl-" + uuid.NewString()
				redistest.Cleanup(t, tg.Client, APIKey(key).Key(prefix, "token-bucket"))
				var got []int
				for range 12 {
					got = append(got, get(t, http.DefaultClient, url+HelloPath, "X-API-Key", key).status)
				}
				want := []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 429}
				if !slices.Equal(got, want) {
					t.Errorf("12 requests on a bucket of 10 = %v, want %v", got, want)
				}
				if c := decisions(scrape(t, http.DefaultClient, url)); c != (Counts{Allowed: 10, Limited: 2}) {
					t.Errorf("decisions %+v, want 10 allowed and 2 limited, none undecided", c)
				}
				cancel()
				if err := <-errc; err != nil {
					t.Errorf("Run after cancel = %v", err)
				}
				waitNoKeys(t, tg.Client, prefix+":{probe:*")
			})
			for _, tt := range []struct {
				name string
				drop []string
				want string
			}{
				{"no eval, no evalsha", []string{"+eval", "+evalsha"}, "add +eval to its rules"},
				{"no evalsha", []string{"+evalsha"}, "add +evalsha to its rules"},
				{"no eval", []string{"+eval"}, "add +eval to its rules"},
				{"no time", []string{"+time"}, "calls TIME (line "}, // Redis 7 words a script's NOPERM differently
				{"no hset", []string{"+hset"}, "add +hset to its rules"},
				{"no key pattern", []string{"~" + prefix + ":*"}, "may not touch this key"},
			} {
				t.Run(tt.name, func(t *testing.T) {
					rules := without(append(slices.Clone(connectRules), minimal...), tt.drop...)
					if tt.name == "no key pattern" {
						rules = append(rules, "~other:*")
					}
					client := aclClient(t, tg, rules...)
					h := newHandler(t, client, Config{Params: bucket(t, 10, "1/m"), KeyPrefix: prefix})
					err := h.Probe(context.Background())
					if err == nil {
						t.Fatalf("Probe as a user with %v: no error", rules)
					}
					msg := err.Error()
					if exitcode.Code(err) != exitcode.Unreachable || !strings.Contains(msg, tt.want) ||
						!strings.Contains(msg, "serve's minimal ACL: "+strings.Join(minimal, " ")) || strings.Contains(msg, "\n") {
						t.Errorf("Probe as a user with %v = %q (exit %d), want one exit-3 line with %q and the minimal ACL", rules, msg, exitcode.Code(err), tt.want)
					}
					// The refused server is never listened on: Run returns before it binds.
					out := &redistest.Buffer{}
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // a Run that serves ends with nil here
					defer cancel()
					if err := Run(ctx, Config{Store: redislimit.NewStore(client), Params: bucket(t, 10, "1/m"), KeyPrefix: prefix}, "127.0.0.1:0", out); exitcode.Code(err) != exitcode.Unreachable {
						t.Errorf("Run as a user with %v = %v (exit %d), want exit 3", rules, err, exitcode.Code(err))
					}
					if strings.Contains(out.String(), "listening") {
						t.Errorf("Run printed %q before refusing", out.String())
					}
				})
			}
		})
	}
}

// waitListening reads Run's startup line from out and returns the URL.
func waitListening(t *testing.T, out *redistest.Buffer, errc <-chan error) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-errc:
			t.Fatalf("Run ended before listening: %v (output %q)", err, out.String())
		default:
		}
		if _, rest, ok := strings.Cut(out.String(), "serve: listening on "); ok {
			url, _, _ := strings.Cut(rest, ";")
			return url
		}
	}
	t.Fatalf("no startup line: %q", out.String())
	return ""
}

// waitNoKeys fails unless no key matches pattern within a few seconds (a
// probe key the user may not DEL is set to expire in 1 ms).
func waitNoKeys(t *testing.T, c redis.UniversalClient, pattern string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		keys := redistest.ScanKeys(t, c, pattern)
		if len(keys) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left behind: %v", keys)
		}
	}
}

// TestRuntimeNoPerm: a user whose ACL lets the probe through but not the
// requests' buckets (its key pattern covers only the probe keys) gets every
// request decided per Fail, and the NOPERM is logged once, with the hint,
// and counted under reason "noperm". Standalone and cluster.
func TestRuntimeNoPerm(t *testing.T) {
	for _, tg := range []redistest.Target{redistest.Standalone(t), redistest.Cluster(t)} {
		t.Run(tg.Name, func(t *testing.T) {
			prefix := "test-" + uuid.NewString()
			rules := without(append(slices.Clone(connectRules), minimalRules(t, prefix)...), "~"+prefix+":*")
			client := aclClient(t, tg, append(rules, "~"+prefix+":{probe:*")...)
			for _, fail := range []FailMode{FailOpen, FailClosed} {
				logs := &redistest.Buffer{}
				h := newHandler(t, client, Config{Params: bucket(t, 10, "1/m"), KeyPrefix: prefix, Fail: fail, Log: logs, RedisTimeout: 5 * time.Second})
				if err := h.Probe(context.Background()); err != nil {
					t.Fatalf("Probe: %v", err)
				}
				ts := httptest.NewServer(h)
				t.Cleanup(ts.Close)
				want := map[FailMode]int{FailOpen: 200, FailClosed: 503}[fail]
				for i := range 3 {
					if r := get(t, ts.Client(), ts.URL+HelloPath, "X-API-Key", "k"); r.status != want {
						t.Errorf("fail %s: request %d = %d, want %d", fail, i+1, r.status, want)
					}
				}
				if f := h.Failures(); f != (Failures{NoPerm: 3}) {
					t.Errorf("fail %s: Failures() = %+v, want 3 noperm", fail, f)
				}
				m := scrape(t, ts.Client(), ts.URL)
				if m[`ratelimit_limiter_failures_total{reason="noperm"}`] != 3 {
					t.Errorf("fail %s: /metrics noperm = %d, want 3", fail, m[`ratelimit_limiter_failures_total{reason="noperm"}`])
				}
				l := logs.String()
				if strings.Count(l, "\n") != 1 || !strings.Contains(l, "limiter refused by the Redis ACL, failing "+string(fail)) ||
					!strings.Contains(l, "may not touch this key") || strings.Contains(l, "\"k\"") {
					t.Errorf("fail %s: log = %q, want one line with the ACL hint", fail, l)
				}
			}
		})
	}
}

// TestForeignBucket: a bucket key that holds data serve did not write is
// refused by the script; serve answers per Fail, logs it once, and leaves
// the key exactly as it was. Every target.
func TestForeignBucket(t *testing.T) {
	for _, tg := range redistest.All(t) {
		t.Run(tg.Name, func(t *testing.T) {
			for _, fail := range []FailMode{FailOpen, FailClosed} {
				logs := &redistest.Buffer{}
				h := newHandler(t, tg.Client, Config{Params: bucket(t, 10, "1/m"), Fail: fail, Log: logs, RedisTimeout: 5 * time.Second})
				ts := httptest.NewServer(h)
				t.Cleanup(ts.Close)
				apiKey := "foreign-" + uuid.NewString()
				key := APIKey(apiKey).Key(h.Config().KeyPrefix, "token-bucket")
				redistest.Cleanup(t, tg.Client, key)
				ctx := context.Background()
				if err := tg.Client.Set(ctx, key, "someone else's", 0).Err(); err != nil {
					t.Fatal(err)
				}
				want := map[FailMode]int{FailOpen: 200, FailClosed: 503}[fail]
				for i := range 3 {
					r := get(t, ts.Client(), ts.URL+HelloPath, "X-API-Key", apiKey)
					if r.status != want || r.header.Get("RateLimit") != "" {
						t.Errorf("fail %s: request %d = %d (RateLimit %q), want %d without RateLimit", fail, i+1, r.status, r.header.Get("RateLimit"), want)
					}
				}
				if v, err := tg.Client.Get(ctx, key).Result(); err != nil || v != "someone else's" {
					t.Errorf("fail %s: foreign key now %q (%v), want it untouched", fail, v, err)
				}
				if ttl, err := tg.Client.PTTL(ctx, key).Result(); err != nil || ttl != -1 {
					t.Errorf("fail %s: foreign key TTL now %v (%v), want none", fail, ttl, err)
				}
				if f := h.Failures(); f != (Failures{Script: 3}) {
					t.Errorf("fail %s: Failures() = %+v, want 3 script", fail, f)
				}
				l := logs.String()
				if strings.Count(l, "\n") != 1 || !strings.Contains(l, "limiter script refused bucket "+key+", failing "+string(fail)) ||
					!strings.Contains(l, "the key is left as it is") || strings.Contains(l, apiKey) {
					t.Errorf("fail %s: log = %q, want one line naming the bucket", fail, l)
				}
			}
		})
	}
}

// TestLogInjection: control bytes a client puts in the API key or the path
// never reach the log as such (a CR/LF would forge a line, an ESC drive the
// terminal), nor does the API key itself; the lines of a failing limiter
// and of the HTTP server stay one line each.
func TestLogInjection(t *testing.T) {
	tg := redistest.Standalone(t)
	logs := &redistest.Buffer{}
	h := newHandler(t, tg.Client, Config{Params: bucket(t, 10, "1/m"), Fail: FailClosed, Log: logs, RedisTimeout: 5 * time.Second})
	s, err := start(h, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.srv.Close() })
	forget(t, tg.Client, h, IP(netip.MustParseAddr("127.0.0.1")))
	raw := func(t *testing.T, path, apiKey string) int {
		t.Helper()
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nX-API-Key: "+apiKey+"\r\nConnection: close\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("GET %q with X-API-Key %q: %v", path, apiKey, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// net/http refuses control bytes in a header value before serve sees them.
	if code := raw(t, "/hello", "evil\x1b[31mred"); code != http.StatusBadRequest {
		t.Errorf("X-API-Key with ESC = %d, want 400 from net/http", code)
	}
	// C1 controls and line separators in UTF-8 pass; so does a path with
	// encoded CR, LF and ESC. The bucket holds foreign data, so the
	// limiter fails and logs.
	apiKey := "evil\u0085serve: forged\u2028line"
	key := APIKey(apiKey).Key(h.Config().KeyPrefix, "token-bucket")
	redistest.Cleanup(t, tg.Client, key)
	if err := tg.Client.Set(context.Background(), key, "foreign", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if code := raw(t, "/hello%0d%0aserve:%20forged%1b", apiKey); code != http.StatusServiceUnavailable {
		t.Errorf("request = %d, want 503 (the bucket holds foreign data)", code)
	}
	// A message of the HTTP server's own log, with control bytes in it.
	s.srv.ErrorLog.Printf("from a client: %s", "a\r\nserve: forged\x1b[2J")
	l := logs.String()
	for _, line := range strings.SplitAfter(l, "\n") {
		body := strings.TrimSuffix(line, "\n")
		if strings.ContainsAny(body, "\r\n\t\x1b\x00\x7f\u0085\u2028") || strings.HasPrefix(body, "serve: forged") {
			t.Errorf("log line %q carries control bytes or a forged line", line)
		}
	}
	if strings.Count(l, "\n") != 2 || !strings.Contains(l, `a\x0d\x0aserve: forged\x1b[2J`) || strings.Contains(l, "evil") {
		t.Errorf("log = %q, want two lines, the server's escaped, never the API key", l)
	}
}

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, ünïcode, back\\slash", "plain text, ünïcode, back\\slash"},
		{"a\r\nb", `a\x0d\x0ab`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u0085sep\u2028", `c1\u0085sep\u2028`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzEscape: whatever the input, the output has no control byte, no line
// separator and is valid UTF-8, and clean input comes back unchanged.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "\x1b[2J", "\xff\xfe", "\u2028\u0085", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: not UTF-8", s, out)
		}
		for i, r := range out {
			if unsafeRune(r, utf8.RuneLen(r)) {
				t.Fatalf("Escape(%q) = %q: unsafe rune %U at %d", s, out, r, i)
			}
		}
		clean := utf8.ValidString(s)
		for _, r := range s {
			clean = clean && !unsafeRune(r, utf8.RuneLen(r))
		}
		if clean && out != s {
			t.Fatalf("Escape(%q) = %q, want it unchanged", s, out)
		}
	})
}
