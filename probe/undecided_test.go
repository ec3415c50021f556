package probe

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/limtest"
)

// bucket is a token bucket of capacity c refilled at r per second, kept
// per key: the reference the fakes below decide with.
type bucket struct {
	mu   sync.Mutex
	c, r float64
	keys map[string]*[2]float64 // tokens, last (seconds)
}

func newBucket(c, r float64) *bucket { return &bucket{c: c, r: r, keys: map[string]*[2]float64{}} }

// take decides one request of key now: admitted and the whole tokens left.
func (b *bucket) take(key string) (bool, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := float64(time.Now().UnixNano()) / 1e9
	s := b.keys[key]
	if s == nil {
		s = &[2]float64{b.c, now}
		b.keys[key] = s
	}
	s[0] = min(b.c, s[0]+(now-s[1])*b.r)
	s[1] = now
	if s[0] >= 1 {
		s[0]--
		return true, int(s[0])
	}
	return false, 0
}

// windows are fixed windows of w from each key's first request.
type windows struct {
	mu   sync.Mutex
	w    time.Duration
	keys map[string]*[2]int64 // start (unix ns), hits
}

func newWindows(w time.Duration) *windows { return &windows{w: w, keys: map[string]*[2]int64{}} }

// hit counts one request of key: its number in the window and the time
// left in it.
func (ws *windows) hit(key string) (int, time.Duration) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	now := time.Now().UnixNano()
	x := ws.keys[key]
	if x == nil || time.Duration(now-x[0]) >= ws.w {
		x = &[2]int64{now, 0}
		ws.keys[key] = x
	}
	x[1]++
	return int(x[1]), ws.w - time.Duration(now-x[0])
}

// fake serves h on a free loopback port, stopped at cleanup.
func fake(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// limited writes a 429 with an honest Retry-After.
func limited(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
}

// TestNoEvidenceIsNeverPass: targets that give no evidence of a limiter,
// or evidence against the one they advertise, are undecided or fail, exit
// 1, never pass, never an internal error: the audit and the fingerprint
// alike (issue 29, item 3, 4, 5).
func TestNoEvidenceIsNeverPass(t *testing.T) {
	targets := []struct {
		name string
		url  func(t *testing.T) string
		mod  func(*Options)
		// want is the audit's verdict; fp the fingerprint's
		want, fp string
	}{
		{"never refuses, advertising q=5", func(t *testing.T) string {
			return fake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("RateLimit-Policy", `"d";q=5;w=1`)
				fmt.Fprintln(w, "ok")
			})
		}, nil, doc.VerdictFail, doc.VerdictUndecided},
		{"never refuses, nothing advertised", func(t *testing.T) string {
			return fake(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
		}, nil, "", doc.VerdictUndecided},
		{"refuses everything", func(t *testing.T) string {
			return fake(t, func(w http.ResponseWriter, r *http.Request) { limited(w) })
		}, func(o *Options) { o.MaxWait, o.MaxTime = 2*time.Second, 4*time.Second }, doc.VerdictFail, doc.VerdictUndecided},
		{"random admitter (97%)", func(t *testing.T) string {
			return fake(t, func(w http.ResponseWriter, r *http.Request) {
				if rand.IntN(100) < 3 {
					limited(w)
					return
				}
				fmt.Fprintln(w, "ok")
			})
		}, nil, "", ""},
		{"lying policy q=1000000, enforcing 5/s", func(t *testing.T) string {
			b := newBucket(5, 5)
			return fake(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("RateLimit-Policy", `"d";q=1000000;w=1`)
				if ok, _ := b.take(r.Header.Get(DefaultIdentityHeader)); !ok {
					limited(w)
					return
				}
				fmt.Fprintln(w, "ok")
			})
		}, nil, doc.VerdictFail, ""},
		{"--budget 1", func(t *testing.T) string {
			b := newBucket(5, 5)
			return fake(t, func(w http.ResponseWriter, r *http.Request) {
				if ok, _ := b.take(r.Header.Get(DefaultIdentityHeader)); !ok {
					limited(w)
					return
				}
				fmt.Fprintln(w, "ok")
			})
		}, func(o *Options) { o.Budget = 1 }, "", doc.VerdictUndecided},
		{"resets most connections", func(t *testing.T) string {
			var n atomic.Int64
			return fake(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1)%12 != 1 { // the first answered, then 11 of 12 reset
					if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
						if tc, ok := c.(*net.TCPConn); ok {
							_ = tc.SetLinger(0)
						}
						c.Close()
						return
					}
				}
				fmt.Fprintln(w, "ok")
			})
		}, func(o *Options) { o.MaxTime = 20 * time.Second }, "", doc.VerdictUndecided},
	}
	for _, tt := range targets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := tt.url(t)
			res := probe(t, url, func(o *Options) {
				if tt.mod != nil {
					tt.mod(o)
				}
			})
			if res.Pass() || tt.want != "" && res.Verdict != tt.want {
				dump(t, res)
				t.Errorf("probe: verdict %s, want %s (never pass)", res.Verdict, cmpOr(tt.want, "fail or undecided"))
			}
			fp := fingerprint(t, url, func(o *Options) {
				if tt.mod != nil {
					tt.mod(o)
				}
			})
			if fp.Pass() || tt.fp != "" && fp.Verdict != tt.fp {
				dumpFingerprint(t, fp)
				t.Errorf("fingerprint: verdict %s, want %s (never pass)", fp.Verdict, cmpOr(tt.fp, "fail or undecided"))
			}
			if fp.Verdict == doc.VerdictUndecided && !strings.HasPrefix(fp.Checks[0].Message, "undecided: ") {
				t.Errorf("fingerprint undecided without the reason: %q", fp.Checks[0].Message)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestLyingPolicyFailsPolicy: refusals after 5 admitted requests
// contradict an advertised q=1000000: the policy check fails on that
// evidence (issue 29 item 5).
func TestLyingPolicyFailsPolicy(t *testing.T) {
	t.Parallel()
	b := newBucket(5, 5)
	url := fake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"d";q=1000000;w=1`)
		if ok, _ := b.take(r.Header.Get(DefaultIdentityHeader)); !ok {
			limited(w)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	res := probe(t, url)
	st := statusOf(res)
	if st[CheckPolicy] != Fail || st[CheckLimitedStatus] != Pass {
		dump(t, res)
		t.Fatalf("policy %s, limited-status %s; want fail (refused after about 5, advertised 1000000), pass", st[CheckPolicy], st[CheckLimitedStatus])
	}
}

// TestRetryAfterZeroLateInWindow: a fixed window of 5 per 2 s that sends
// Retry-After: 0 in the last half second of each window, where a retry at
// once is still refused: retry-after-honest judges every refusal and
// every retry the probe made, and fails (issue 29 item 7). The control:
// the same window with an honest Retry-After passes.
func TestRetryAfterZeroLateInWindow(t *testing.T) {
	for _, lie := range []bool{true, false} {
		t.Run(fmt.Sprintf("lie=%v", lie), func(t *testing.T) {
			t.Parallel()
			const q, w = 5, 2 * time.Second
			wins := newWindows(w)
			url := fake(t, func(rw http.ResponseWriter, r *http.Request) {
				n, left := wins.hit(r.Header.Get(DefaultIdentityHeader) + "|" + r.RemoteAddr[:strings.LastIndex(r.RemoteAddr, ":")])
				rw.Header().Set("RateLimit-Policy", fmt.Sprintf(`"d";q=%d;w=2`, q))
				rw.Header().Set("RateLimit", fmt.Sprintf(`"d";r=%d;t=%d`, max(q-n, 0), int(left.Seconds()+0.999)))
				if n > q {
					ra := int(left.Seconds() + 0.999)
					if lie && left < 700*time.Millisecond {
						ra = 0
					}
					rw.Header().Set("Retry-After", fmt.Sprint(ra))
					rw.Header().Set("Cache-Control", "no-store")
					rw.WriteHeader(http.StatusTooManyRequests)
					return
				}
				fmt.Fprintln(rw, "ok")
			})
			res := probe(t, url)
			st := statusOf(res)
			if lie && st[CheckRetryAfterHonest] != Fail {
				dump(t, res)
				t.Fatalf("Retry-After: 0 late in the window: retry-after-honest %s, want fail", st[CheckRetryAfterHonest])
			}
			if !lie && st[CheckRetryAfterHonest] == Fail {
				dump(t, res)
				t.Fatalf("an honest Retry-After: retry-after-honest fails")
			}
		})
	}
}

// TestSharedQuotaUnreadableReset (issue 29 item 6): a fixed window of 5
// per 2 s keyed by the client's address whose reset the probe cannot read
// (X-RateLimit-Reset in a format of its own): the probe waits for the
// quota to come back instead of skipping, so the spoofing phase runs; a
// limiter keyed by the raw X-Forwarded-For value fails ip-spoofing, one
// keyed by the peer passes it.
func TestSharedQuotaUnreadableReset(t *testing.T) {
	for _, trustXFF := range []bool{false, true} {
		t.Run(fmt.Sprintf("trust-xff=%v", trustXFF), func(t *testing.T) {
			t.Parallel()
			const q, w = 5, 2 * time.Second
			wins := newWindows(w)
			url := fake(t, func(rw http.ResponseWriter, r *http.Request) {
				k := r.RemoteAddr[:strings.LastIndex(r.RemoteAddr, ":")]
				if v := r.Header.Get("X-Forwarded-For"); trustXFF && v != "" {
					k = v
				}
				n, _ := wins.hit(k)
				rw.Header().Set("X-RateLimit-Limit", fmt.Sprint(q))
				rw.Header().Set("X-RateLimit-Remaining", fmt.Sprint(max(q-n, 0)))
				rw.Header().Set("X-RateLimit-Reset", "soon")
				if n > q {
					rw.Header().Set("Cache-Control", "no-store")
					rw.WriteHeader(http.StatusTooManyRequests) // no Retry-After either

					return
				}
				fmt.Fprintln(rw, "ok")
			})
			res := probe(t, url, func(o *Options) { o.MaxWait = 10 * time.Second })
			st := statusOf(res)
			if !res.Shared {
				dump(t, res)
				t.Fatalf("the identities share one quota: the probe did not see it")
			}
			want := Pass
			if trustXFF {
				want = Fail
			}
			if st[CheckSpoofing] != want {
				dump(t, res)
				t.Fatalf("ip-spoofing %s, want %s", st[CheckSpoofing], want)
			}
			if !anyNote(res.Notes, "reset is not announced") {
				dump(t, res)
				t.Errorf("the notes do not say the probe waited for an unannounced reset")
			}
		})
	}
}

func anyNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// TestDelayingLimiter (issue 31 item 1): a limiter that never refuses but
// holds each request over 10 per 2 s by 100 ms more, up to 1 s: probe
// names the delays (limited-status WARN, not "never limited", not
// undecided); the control, the same target without delays, is undecided.
func TestDelayingLimiter(t *testing.T) {
	t.Parallel()
	url := limtest.Behave(t, limtest.BehaviourSpec{Kind: limtest.Slowdown, Limit: 10, Window: 2 * time.Second,
		Step: 100 * time.Millisecond, MaxDelay: time.Second, KeyHeader: DefaultIdentityHeader})
	res := probe(t, url)
	c := checkOf(res, CheckLimitedStatus)
	if c.Status != Warn || !strings.Contains(c.Message, "delays") || res.Verdict == doc.VerdictUndecided {
		dump(t, res)
		t.Fatalf("limited-status %s %q, verdict %s; want a warning naming the delays, decided", c.Status, c.Message, res.Verdict)
	}
}

func checkOf(res Result, id string) Check {
	for _, c := range res.Checks {
		if c.ID == id {
			return c
		}
	}
	return Check{}
}

// TestUnidentifiedBypass (issue 31 item 13): a limiter that limits each
// X-API-Key but lets requests without one through unlimited fails
// identity-isolation naming the bypass; the control, one that limits them
// by address, passes it.
func TestUnidentifiedBypass(t *testing.T) {
	for _, bypass := range []bool{true, false} {
		t.Run(fmt.Sprintf("bypass=%v", bypass), func(t *testing.T) {
			t.Parallel()
			b := newBucket(5, 5)
			url := fake(t, func(w http.ResponseWriter, r *http.Request) {
				k := r.Header.Get(DefaultIdentityHeader)
				if k == "" {
					if bypass {
						fmt.Fprintln(w, "ok")
						return
					}
					k = "addr:" + r.RemoteAddr[:strings.LastIndex(r.RemoteAddr, ":")]
				}
				ok, left := b.take(k)
				w.Header().Set("RateLimit-Policy", `"d";q=5;w=1`)
				w.Header().Set("RateLimit", fmt.Sprintf(`"d";r=%d;t=1`, left))
				if !ok {
					limited(w)
					return
				}
				fmt.Fprintln(w, "ok")
			})
			res := probe(t, url)
			st := statusOf(res)
			if want := map[bool]string{true: Fail, false: Pass}[bypass]; st[CheckIsolation] != want {
				dump(t, res)
				t.Fatalf("identity-isolation %s, want %s", st[CheckIsolation], want)
			}
		})
	}
}

// TestRetryAtOnceSamples: retry-after-honest after Retry-After: 0 is
// judged on every retry at once E made, each against the answer just
// before it: one refused fails the check, even after a first retry the
// quota's refill admitted by luck (CI: serve --break retry-after-zero
// passed on a single retry sent late on a busy machine); all admitted
// passes only when they went out sooner than one request's quota comes
// back; later ones prove nothing and the check is skipped.
func TestRetryAtOnceSamples(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	zero := http.Header{"Retry-After": {"0"}}
	// at is a request sent at ms and answered 1 ms later
	at := func(ms int, status int) obs {
		o := obs{Sent: t0.Add(time.Duration(ms) * time.Millisecond), Done: t0.Add(time.Duration(ms+1) * time.Millisecond), Status: status}
		if status == http.StatusTooManyRequests {
			o.Header = zero
		}
		return o
	}
	// moves are E's answers in order: the refusal, then each retry
	moves := func(ms ...int) []retryAtOnce {
		var out []retryAtOnce
		for i := 1; i < len(ms); i++ {
			status := func(m int) int {
				if m < 0 {
					return http.StatusTooManyRequests
				}
				return http.StatusOK
			}
			abs := func(m int) int { return max(m, -m) }
			out = append(out, retryAtOnce{Ref: at(abs(ms[i-1]), status(ms[i-1])), Retry: at(abs(ms[i]), status(ms[i]))})
		}
		return out
	}
	// a negative time is a refusal (Retry-After: 0), a positive one an
	// admission; the policy is 10 per 2 s: one request back in 200 ms
	for _, tt := range []struct {
		name  string
		moves []retryAtOnce
		want  string
	}{
		{"the first retry refused", moves(-100, -103), Fail},
		{"a lucky first retry, then one refused", moves(-100, 150, -152, -155), Fail},
		{"every retry at once admitted", moves(-100, 103, -105, 108, -110, 112), Pass},
		{"admitted, but each 300 ms later", moves(-100, 401, -403, 704), Skip},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &data{q: 10, w: 2 * time.Second, eRetries: tt.moves}
			c := d.retryAtOnce(Check{Check: doc.Check{ID: CheckRetryAfterHonest}})
			if c.Status != tt.want {
				t.Errorf("retry-after-honest %s (%s), want %s", c.Status, c.Message, tt.want)
			}
		})
	}
}

// TestPolicyRefillCut: one window after running out, identity A's burst
// is judged against the policy only when the limiter refused some of it:
// a burst the budget cut (624 sent, all admitted, on a bucket of 1000
// under four CPU burners) is too small to tell and is said so, not a
// policy the limiter does not enforce; 624 admitted of 1100 sent is (the
// negative control), and so is 1400 admitted.
func TestPolicyRefillCut(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	// burst is n requests sent at ms, the first admitted ones admitted
	burst := func(ms, n, admitted int) []obs {
		var out []obs
		for i := range n {
			o := obs{Sent: t0.Add(time.Duration(ms) * time.Millisecond), Done: t0.Add(time.Duration(ms+100) * time.Millisecond), Status: http.StatusOK}
			if i >= admitted {
				o.Status = http.StatusTooManyRequests
			}
			out = append(out, o)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		refill []obs
		want   string
	}{
		{"cut by the budget, all admitted", burst(10_200, 624, 624), Pass},
		{"624 admitted of 1100", burst(10_200, 1100, 624), Fail},
		{"1400 admitted of 1500", burst(10_200, 1500, 1400), Fail},
		{"1000 admitted of 1500", burst(10_200, 1500, 1000), Pass},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &data{q: 1000, w: 10 * time.Second, a: burst(0, 1050, 1000), aRefill: tt.refill, aWaited: 10 * time.Second}
			c := d.policyCheck()
			if c.Status != tt.want {
				t.Errorf("policy %s (%s, %q), want %s", c.Status, c.Message, c.Evidence, tt.want)
			}
		})
	}
}
