package judge

import (
	"slices"
	"testing"
	"time"
)

// bucketAnswers simulates n token buckets of capacity c refilled at r per
// second, taking turns (round robin), at the given send times; each
// request is decided 1 ms after it is sent and answered at once. It
// returns the admissions and what they reported.
func bucketAnswers(n int, c, r float64, sends []time.Duration) []Answer {
	t0 := time.Unix(1000, 0)
	tokens := make([]float64, n)
	last := make([]time.Duration, n)
	for i := range tokens {
		tokens[i] = c
	}
	var out []Answer
	for i, s := range sends {
		k := i % n
		at := s + time.Millisecond
		tokens[k] = min(c, tokens[k]+(at-last[k]).Seconds()*r)
		last[k] = at
		if tokens[k] >= 1 {
			tokens[k]--
			out = append(out, Answer{Sent: t0.Add(s), Done: t0.Add(at + time.Millisecond), Remaining: int64(tokens[k])})
		}
	}
	return out
}

func TestInstances(t *testing.T) {
	burst := func(k int) []time.Duration { // k requests in flight at once
		out := make([]time.Duration, k)
		for i := range out {
			out[i] = time.Duration(i) * 10 * time.Microsecond
		}
		return out
	}
	steady := func(every time.Duration, d time.Duration) []time.Duration {
		var out []time.Duration
		for s := time.Duration(0); s < d; s += every {
			out = append(out, s)
		}
		return out
	}
	perToken := 200 * time.Millisecond // 5 per second
	tests := []struct {
		name      string
		answers   []Answer
		min, most int
	}{
		{"one bucket, a burst", bucketAnswers(1, 5, 5, burst(20)), 1, 1},
		{"three buckets, a burst", bucketAnswers(3, 5, 5, burst(20)), 3, 3},
		{"one bucket of 1000, a burst", bucketAnswers(1, 1000, 100, burst(1100)), 1, 1},
		{"one bucket at 20/s for 9 s", bucketAnswers(1, 5, 5, steady(50*time.Millisecond, 9*time.Second)), 1, 1},
		{"three buckets at 20/s for 9 s", bucketAnswers(3, 5, 5, steady(50*time.Millisecond, 9*time.Second)), 3, 3},
		{"three buckets at 20/s for 6 s", bucketAnswers(3, 5, 5, steady(50*time.Millisecond, 6*time.Second)), 3, 3},
		{"two buckets, a burst", bucketAnswers(2, 5, 5, burst(20)), 2, 2},
		{"one bucket at 40/s for 6 s", bucketAnswers(1, 5, 5, steady(25*time.Millisecond, 6*time.Second)), 1, 1},
	}
	// what the suite's three replicas behind nginx at 20/s for 6 s once
	// reported: after the first admissions r stayed at 0, 81 of 85
	// consecutive admissions level over 5.95 s, where one counter's
	// refill is about 30 (the generous bound, 36, gave "about 2")
	var saturated []Answer
	t0 := time.Unix(1000, 0)
	for i := range 86 {
		sent := t0.Add(time.Duration(i) * 70 * time.Millisecond)
		saturated = append(saturated, Answer{Sent: sent, Done: sent.Add(5 * time.Millisecond), Remaining: int64(max(4-i, 0))})
	}
	tests = append(tests, struct {
		name      string
		answers   []Answer
		min, most int
	}{"three counters kept at their refill", saturated, 3, 3})
	// what the suite's three replicas once reported on a busy machine:
	// 38 admissions in flight together over about 2 s (each answered
	// 300 ms after it was sent), r=3 x7, r=2 x12, r=1 x13 and six 0s;
	// one counter may repeat a value 10 times over that span, so the
	// multiplicity of 12 says at least 2 counters, never 12 (it said 12)
	var long []Answer
	for i, r := range slices.Concat(slices.Repeat([]int64{3}, 7), slices.Repeat([]int64{2}, 12), slices.Repeat([]int64{1}, 13), slices.Repeat([]int64{0}, 6)) {
		sent := t0.Add(time.Duration(i) * 45 * time.Millisecond)
		long = append(long, Answer{Sent: sent, Done: sent.Add(300 * time.Millisecond), Remaining: r})
	}
	// and its control: one bucket at about its refill, every request
	// answered 400 ms later, so all are in flight together
	var oneLong []Answer
	for _, a := range bucketAnswers(1, 5, 5, steady(190*time.Millisecond, 2*time.Second)) {
		a.Done = a.Sent.Add(400 * time.Millisecond)
		oneLong = append(oneLong, a)
	}
	tests = append(tests, []struct {
		name      string
		answers   []Answer
		min, most int
	}{{"three counters in one long burst", long, 2, 3}, {"one bucket in one long burst", oneLong, 1, 1}}...)
	for _, tt := range tests {
		n, ev := Instances(tt.answers, perToken)
		if n < tt.min || n > tt.most {
			t.Errorf("%s: Instances = %d (%s), want %d to %d", tt.name, n, ev, tt.min, tt.most)
		}
		if n >= 2 && ev == "" {
			t.Errorf("%s: %d counters without evidence", tt.name, n)
		}
	}
}
