package serve

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/limiter/redislimit"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func bucket(t *testing.T, capacity int64, r string) limiter.Params {
	t.Helper()
	return limiter.Params{Algo: limiter.TokenBucket, Capacity: capacity, Rate: rate.MustParse(r)}
}

// newHandler builds New's handler on client, with a key prefix unique to
// the test unless cfg names one.
func newHandler(t *testing.T, client redis.Scripter, cfg Config) *Handler {
	t.Helper()
	cfg.Store = redislimit.NewStore(client)
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = "test-" + uuid.NewString()
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return h
}

// forget deletes the buckets of ids on client when the test ends.
func forget(t *testing.T, client redis.UniversalClient, h *Handler, ids ...Identity) {
	t.Helper()
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = id.Key(h.Config().KeyPrefix, h.Limiter().Params().Algo)
	}
	redistest.Cleanup(t, client, keys...)
}

type response struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

// get sends GET url with header name/value pairs and reads the whole body.
func get(t *testing.T, c *http.Client, url string, kv ...string) response {
	t.Helper()
	return do(t, c, http.MethodGet, url, kv...)
}

func do(t *testing.T, c *http.Client, method, url string, kv ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, url, err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b), elapsed: time.Since(start)}
}

// scrape reads GET /metrics into "name{labels}" -> value, checking that
// every sample's family has # HELP and # TYPE lines before it.
func scrape(t *testing.T, c *http.Client, base string) map[string]int64 {
	t.Helper()
	r := get(t, c, base+MetricsPath)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", r.status)
	}
	if ct := r.header.Get("Content-Type"); ct != MetricsContentType {
		t.Errorf("GET /metrics Content-Type = %q, want %q", ct, MetricsContentType)
	}
	return parseMetrics(t, r.body)
}

func parseMetrics(t *testing.T, text string) map[string]int64 {
	t.Helper()
	help, typ := map[string]bool{}, map[string]string{}
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(f, " ")
			help[name] = true
			continue
		}
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(f, " ")
			if kind != "counter" && kind != "gauge" {
				t.Errorf("metric %s has TYPE %q", name, kind)
			}
			typ[name] = kind
			continue
		}
		sample, value, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("metrics line %q is not `name value`", line)
		}
		family, _, _ := strings.Cut(sample, "{")
		if !help[family] || typ[family] == "" {
			t.Errorf("metric %s has no # HELP or # TYPE line before it", family)
		}
		if typ[family] == "counter" && !strings.HasSuffix(family, "_total") {
			t.Errorf("counter %s does not end in _total", family)
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			t.Fatalf("metrics line %q: value: %v", line, err)
		}
		out[sample] = n
	}
	return out
}

// decisions reads the four decision counters from a scrape.
func decisions(m map[string]int64) Counts {
	return Counts{
		Allowed:    m[`ratelimit_requests_total{decision="allowed"}`],
		Limited:    m[`ratelimit_requests_total{decision="limited"}`],
		FailOpen:   m[`ratelimit_requests_total{decision="fail_open"}`],
		FailClosed: m[`ratelimit_requests_total{decision="fail_closed"}`],
	}
}
