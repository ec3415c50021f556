package limtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HAProxyLimit configures a stick table that counts http_req_rate(Period)
// per key and a deny rule above Limit (see docs/limiters.md).
type HAProxyLimit struct {
	// Period is the http_req_rate period, in whole milliseconds (e.g. 2s).
	Period time.Duration
	// Limit is N in "deny if { sc_http_req_rate(0) gt N }": a request is
	// refused when the rate, the request itself counted, exceeds N.
	Limit int
	// Header keys the table by this request header (a string table); empty
	// keys it by the client address (src). A request without the header is
	// not tracked, so not limited.
	Header string
	// Status is deny_status; 0 means 429.
	Status int
	// RetryAfter, when set, is sent as a Retry-After header on refusals
	// (haproxy computes nothing itself).
	RetryAfter string
	// Expire is the table's entry expiry; 0 means 10 × Period (at least 10 s).
	Expire time.Duration
}

// HAProxy starts Debian's haproxy (/usr/sbin/haproxy, else haproxy on
// PATH) in the foreground (-db) with one thread, its configuration and pid
// file in a temporary directory, listening on a free loopback port, and
// returns its base URL. haproxy answers 200 "ok\n" itself (http-request
// return); there is no backend.
func HAProxy(t testing.TB, conf HAProxyLimit) string {
	t.Helper()
	bin, err := lookBinary("/usr/sbin/haproxy", "haproxy")
	if err != nil {
		need(t, "haproxy not found (Debian: apt-get install haproxy): %v", err)
	}
	if conf.Period <= 0 || conf.Period%time.Millisecond != 0 {
		t.Fatalf("limtest.HAProxy: Period must be a positive whole number of milliseconds, got %s", conf.Period)
	}
	if conf.Limit < 0 {
		t.Fatalf("limtest.HAProxy: Limit must not be negative, got %d", conf.Limit)
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfgPath, []byte(haproxyConf(port, conf)), 0o644); err != nil {
			t.Fatalf("haproxy config: %v", err)
		}
		cmd := exec.Command(bin, "-db", "-f", cfgPath, "-p", filepath.Join(dir, "haproxy.pid"))
		cmd.Dir = dir
		p := start(t, "haproxy", cmd)
		err := p.waitDial(port, StartTimeout)
		if err == nil {
			return baseURL(port)
		}
		if portTaken(err) && attempt < 5 {
			continue
		}
		t.Fatalf("start haproxy: %v", err)
	}
}

func haproxyConf(port int, c HAProxyLimit) string {
	period := strconv.FormatInt(c.Period.Milliseconds(), 10) + "ms"
	expire := c.Expire
	if expire <= 0 {
		expire = max(10*c.Period, 10*time.Second)
	}
	table := "type ip size 100k"
	track := "src"
	if c.Header != "" {
		table = "type string len 128 size 100k"
		track = "req.hdr(" + strings.ToLower(c.Header) + ")"
	}
	status := c.Status
	if status == 0 {
		status = 429
	}
	hdr := ""
	if c.RetryAfter != "" {
		hdr = fmt.Sprintf(" hdr Retry-After %q", c.RetryAfter)
	}
	return fmt.Sprintf(`# written by limtest: one haproxy process for one test
global
    nbthread 1
    maxconn 1000

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 30s

frontend limtest
    bind 127.0.0.1:%d
    stick-table %s expire %dms store http_req_rate(%s)
    http-request track-sc0 %s
    http-request deny deny_status %d%s if { sc_http_req_rate(0) gt %d }
    http-request return status 200 content-type text/plain string "ok\n"
`, port, table, expire.Milliseconds(), period, track, status, hdr, c.Limit)
}
