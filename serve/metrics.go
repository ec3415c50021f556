package serve

import (
	"github.com/ratelimit-dev/ratelimit/limiter"

	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MetricsContentType is the Prometheus text exposition format, version 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteMetrics writes the counters in the Prometheus text format:
//
//	# HELP ratelimit_requests_total Requests seen by the rate limiter, by decision.
//	# TYPE ratelimit_requests_total counter
//	ratelimit_requests_total{decision="allowed"} 10
//	ratelimit_requests_total{decision="limited"} 2
//	ratelimit_requests_total{decision="fail_open"} 0
//	ratelimit_requests_total{decision="fail_closed"} 0
//
// followed by ratelimit_limiter_unavailable_total (fail_open plus
// fail_closed: the series to alert on), ratelimit_limiter_failures_total
// by reason (timeout, unreachable, noperm, script) and a
// ratelimit_policy_info gauge naming the algorithm, quota and window.
func (m *Middleware) WriteMetrics(w io.Writer) error {
	c := m.Counts()
	var b strings.Builder
	b.WriteString("# HELP ratelimit_requests_total Requests seen by the rate limiter, by decision.\n")
	b.WriteString("# TYPE ratelimit_requests_total counter\n")
	for _, kv := range []struct {
		name string
		n    int64
	}{{"allowed", c.Allowed}, {"limited", c.Limited}, {"fail_open", c.FailOpen}, {"fail_closed", c.FailClosed}} {
		fmt.Fprintf(&b, "ratelimit_requests_total{decision=%s} %d\n", labelValue(kv.name), kv.n)
	}
	b.WriteString("# HELP ratelimit_limiter_unavailable_total Requests decided without the limiter because Redis failed or missed the deadline (fail open or closed).\n")
	b.WriteString("# TYPE ratelimit_limiter_unavailable_total counter\n")
	fmt.Fprintf(&b, "ratelimit_limiter_unavailable_total %d\n", c.FailOpen+c.FailClosed)
	b.WriteString("# HELP ratelimit_limiter_failures_total Requests decided without the limiter, by reason: timeout, unreachable, noperm (the ACL refused the script or key), script (the script refused the bucket, e.g. foreign data).\n")
	b.WriteString("# TYPE ratelimit_limiter_failures_total counter\n")
	for i := range limiter.NumFailures {
		fmt.Fprintf(&b, "ratelimit_limiter_failures_total{reason=%s} %d\n", labelValue(i.String()), m.failures[i].Load())
	}
	b.WriteString("# HELP ratelimit_policy_info The limiter's algorithm and advertised policy (RateLimit-Policy q and w).\n")
	b.WriteString("# TYPE ratelimit_policy_info gauge\n")
	fmt.Fprintf(&b, "ratelimit_policy_info{algo=%s,fail=%s,quota=\"%d\",window_seconds=\"%d\"} 1\n",
		labelValue(string(m.limiter.Params().Algo)), labelValue(string(m.cfg.Fail)), m.policy.Quota, m.policy.Window)
	_, err := io.WriteString(w, b.String())
	return err
}

// labelValue quotes a label value with the escapes of the text format
// (backslash, double quote, newline).
func labelValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// ServeMetrics answers GET (and HEAD) with WriteMetrics; other methods get 405.
func (m *Middleware) ServeMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var b strings.Builder
	_ = m.WriteMetrics(&b)
	w.Header().Set("Content-Type", MetricsContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.WriteString(w, b.String())
}
