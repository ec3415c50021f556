package load

import (
	"encoding/base64"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
)

// Runs too large to hold are refused before anything is sent, with the
// numbers; rate x duration never overflows on the way.
func TestRunCeilings(t *testing.T) {
	target := "http://127.0.0.1:1/" // never dialled: validation comes first
	auto := &judge.Expectation{Spec: "auto", Auto: true}
	tests := []struct {
		name string
		o    Options
		msg  string
	}{
		{"rate", Options{Rate: rate.MustParse("1e12/s"), Duration: 10 * time.Second},
			"--rate 1000000000000/s for 10s plans 10,000,000,000,000 iterations; the ceiling is 100,000,000: lower --rate or --duration"},
		{"just above", Options{Rate: rate.MustParse("100000001/s"), Duration: time.Second},
			"plans 100,000,001 iterations; the ceiling is 100,000,000"},
		{"beyond int64", Options{Rate: rate.Rate{Count: 1e18, Per: time.Nanosecond}, Duration: 168 * time.Hour},
			"plans 604,800,000,000,000,000,000,000,000,000,000 iterations"},
		{"with expect", Options{Rate: rate.MustParse("1000/s"), Duration: 6 * time.Hour, Expect: auto},
			"plans 21,600,000 iterations; the ceiling is 20,000,000: lower --rate or --duration with --expect"},
		{"duration", Options{Rate: rate.MustParse("1/h"), Duration: 2562047 * time.Hour},
			"--duration 2562047h is longer than the ceiling of 168h"},
		{"identities", Options{Rate: rate.MustParse("1/s"), Duration: time.Second, Identities: 2_000_000_000},
			"--identities 2000000000 is more than the ceiling of 1,000,000"},
		{"timeout", Options{Rate: rate.MustParse("1/s"), Duration: time.Second, Timeout: 2562047 * time.Hour},
			"--timeout 2562047h is longer than the ceiling of 1h"},
		{"max vus", Options{Rate: rate.MustParse("1/s"), Duration: time.Second, MaxVUs: 100_001},
			"--max-vus 100001 is more than the ceiling of 100,000"},
		{"header injection", Options{Rate: rate.MustParse("1/s"), Duration: time.Second, Headers: http.Header{"X": {"a\r\nEvil: 1"}}},
			"-H X: the value must not contain CR, LF"},
		{"identity in Host", Options{Rate: rate.MustParse("1/s"), Duration: time.Second, Identities: 1, IdentityHeader: "host"},
			"--identity-header host is written by the client itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Target = target
			if err := tt.o.Validate(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Validate() = %v (exit %d), want exit 2 with %q", err, exitcode.Code(err), tt.msg)
			}
			res, err := Run(t.Context(), tt.o)
			if res != nil || exitcode.Code(err) != exitcode.Usage {
				t.Errorf("Run() = %v, %v; want exit 2 before anything runs", res, err)
			}
		})
	}
	// the ceilings themselves are accepted
	for _, o := range []Options{
		{Rate: rate.MustParse("100000000/s"), Duration: time.Second},
		{Rate: rate.MustParse("20000000/s"), Duration: time.Second, Expect: auto},
		{Rate: rate.MustParse("1/h"), Duration: MaxDuration, Identities: MaxIdentities, Timeout: MaxTimeout, MaxVUs: MaxVUs},
	} {
		o.Target = target
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%v over %v) = %v, want nil at the ceiling", o.Rate, o.Duration, err)
		}
	}
}

// planRef is ceil(d * m / (10^p * per)) in arbitrary precision.
func planRef(m int64, p int, per, d int64) *big.Int {
	num := new(big.Int).Mul(big.NewInt(d), big.NewInt(m))
	den := new(big.Int).Mul(big.NewInt(per), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil))
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// FuzzPlan: over any rate and duration, Plan never panics; a rate typed as
// a decimal (m / 10^p, p <= 9) plans the big.Int count within 1, or is
// refused because that count is above the ceiling (or the period times the
// scale overflows); any float64 count is planned consistently or refused.
func FuzzPlan(f *testing.F) {
	f.Add(int64(20), uint8(0), int64(time.Second), int64(30*time.Second), uint64(0))
	f.Add(int64(25), uint8(1), int64(time.Second), int64(time.Second), math.Float64bits(2.5))
	f.Add(int64(1e12), uint8(0), int64(time.Second), int64(10*time.Second), math.Float64bits(1e12))
	f.Add(int64(10000009), uint8(7), int64(time.Nanosecond), int64(99*time.Millisecond), math.Float64bits(1.0000009))
	f.Add(int64(math.MaxInt64), uint8(9), int64(math.MaxInt64), int64(math.MaxInt64), math.Float64bits(math.MaxFloat64))
	f.Fuzz(func(t *testing.T, m int64, places uint8, per, dur int64, bits uint64) {
		p := int(places % 10)
		c, _ := new(big.Rat).SetFrac(big.NewInt(m), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)).Float64()
		check := func(r rate.Rate) (rate.Schedule, error) {
			s, err := Plan(r, time.Duration(dur), MaxPlanned)
			if err != nil {
				if exitcode.Code(err) != exitcode.Usage {
					t.Fatalf("Plan(%v, %v): %v is not exit 2", r, time.Duration(dur), err)
				}
				return s, err
			}
			n := s.Planned()
			if n < 1 || n > MaxPlanned {
				t.Fatalf("Plan(%v, %v).Planned() = %d, outside [1, %d]", r, time.Duration(dur), n, MaxPlanned)
			}
			if last, ok := s.Due(n - 1); !ok || last < 0 || last >= time.Duration(dur) {
				t.Fatalf("Due(%d) = %v, %v; want in [0, %v)", n-1, last, ok, time.Duration(dur))
			}
			if _, ok := s.Due(n); ok {
				t.Fatalf("Due(%d) defined past the plan", n)
			}
			return s, nil
		}
		check(rate.Rate{Count: math.Float64frombits(bits), Per: time.Duration(per)})

		if m <= 0 || m >= 1<<53 || per <= 0 || dur <= 0 {
			return
		}
		r := rate.Rate{Count: c, Per: time.Duration(per)}
		s, err := check(r)
		ref := planRef(m, p, per, dur)
		if err != nil {
			if strings.Contains(err.Error(), "period too long") {
				return
			}
			if !strings.Contains(err.Error(), "the ceiling is") || ref.Cmp(big.NewInt(MaxPlanned)) < 0 {
				t.Fatalf("Plan(%d/10^%d per %v, %v) refused: %v; the reference plans %v", m, p, time.Duration(per), time.Duration(dur), err, ref)
			}
			return
		}
		if diff := new(big.Int).Sub(ref, big.NewInt(s.Planned())); diff.CmpAbs(big.NewInt(1)) > 0 {
			t.Fatalf("Plan(%d/10^%d per %v, %v) plans %d, the reference %v", m, p, time.Duration(per), time.Duration(dur), s.Planned(), ref)
		}
	})
}

// The target's userinfo is sent as Basic auth by both clients and never
// shown: the result carries the target with its password masked.
func TestRunUserinfo(t *testing.T) {
	const pw = "s3cret-pw"
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	target := strings.Replace(srv.URL, "http://", "http://user:"+pw+"@", 1) + "/hello"
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+pw))
	for _, tt := range []struct {
		name string
		tr   http.RoundTripper
	}{{"lean client", nil}, {"net/http", &http.Transport{}}} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			auths = nil
			mu.Unlock()
			res := runLoad(t, Options{Target: target, Rate: rate.MustParse("10/s"), Duration: 300 * time.Millisecond, Transport: tt.tr})
			if strings.Contains(res.Target, pw) || !strings.Contains(res.Target, "user:xxxxx@") {
				t.Errorf("result target %q, want the password masked", res.Target)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) != 3 || res.Status["200"] != 3 {
				t.Fatalf("target saw %d requests, status %v errors %v; want 3", len(auths), res.Status, res.Errors)
			}
			for _, a := range auths {
				if a != want {
					t.Errorf("Authorization %q, want %q", a, want)
				}
			}
		})
	}
	// -H Authorization wins over the userinfo, as with net/http
	h, _ := ParseHeaders([]string{"Authorization: Bearer tok"})
	mu.Lock()
	auths = nil
	mu.Unlock()
	runLoad(t, Options{Target: target, Rate: rate.MustParse("10/s"), Duration: 100 * time.Millisecond, Headers: h})
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 1 || auths[0] != "Bearer tok" {
		t.Errorf("with -H Authorization the target saw %q, want [Bearer tok]", auths)
	}
}

func TestValidateTarget(t *testing.T) {
	tests := []struct{ in, msg string }{
		{"127.0.0.1:38511/hello", `"127.0.0.1:38511/hello" has no scheme; add http:// (e.g. http://127.0.0.1:38511/hello)`},
		{"localhost:8011/hello", "add http://"},
		{"user:pw@127.0.0.1:1/x", "add http://"},
		{"ftp://user:pw@h.test/", `scheme "ftp" is not supported`},
		{"http://user:pw@/x", "has no host"},
		{"http://user:pw@127.0.0.1:99999/", "port 99999 is not 1-65535"},
		{"http://user:pw@127.0.0.1:1/\x7f", "is not a URL"},
		{"http://user:pw@[::1/", "is not a URL"},
		{"", "no target"},
	}
	for _, tt := range tests {
		err := ValidateTarget(tt.in)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ValidateTarget(%q) = %v, want exit 2 with %q", tt.in, err, tt.msg)
		}
		if err != nil && strings.Contains(err.Error(), ":pw") {
			t.Errorf("ValidateTarget(%q) shows the password: %v", tt.in, err)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8011/hello", "https://api.example.test/v1", "http://u:p@[::1]:80/"} {
		if err := ValidateTarget(ok); err != nil {
			t.Errorf("ValidateTarget(%q) = %v", ok, err)
		}
	}
}
