package judge

import (
	"fmt"
	"math"
)

// Tolerance is how far an admitted count may stray from the model's, in
// named terms: Total = max(Jitter, Shift) + Rounding + Unknown. It is the
// one tolerance of the tool: the whole run, each fault window and each
// recovery span use it, each with the inputs its doc says.
type Tolerance struct {
	// Jitter is ceil(admission rate x identities x p99 latency): how many
	// admissions the spread of network and queueing time can move
	// across a refill or a window edge.
	Jitter int64 `json:"jitter"`
	// Shift is |the model's count over response-end times - its count
	// over send times|: the target decided somewhere between the two,
	// so a target that queues requests moves admissions by this much.
	Shift int64 `json:"shift"`
	// Rounding is 1 for the target's and the replay's millisecond clocks.
	Rounding int64 `json:"rounding"`
	// Unknown counts requests without a status: each may or may not have
	// reached the limiter.
	Unknown int64 `json:"unknown"`
}

// tolerance computes the terms: perSec is the model's long-run
// admissions per second of one identity, p99Ms the latency that measures
// decision-time spread, bySend and byDone the model's counts over send
// and response-end times, sent the requests the count is over. No term
// exceeds the requests sent: a count cannot stray by more than there are
// requests, however fast the model refills (a rate of 10^9/s made the
// jitter alone millions).
func tolerance(perSec float64, identities int, p99Ms float64, bySend, byDone, unknown, sent int64) Tolerance {
	sent = max(sent, 0)
	jitter := perSec * float64(max(identities, 1)) * p99Ms / 1000
	t := Tolerance{Jitter: sent, Shift: min(abs(byDone-bySend), sent), Rounding: min(1, sent), Unknown: min(unknown, sent)}
	if jitter < float64(sent) { // also false for NaN and +Inf
		t.Jitter = int64(math.Ceil(jitter))
	}
	return t
}

// AdmitsAllNote says that a model admits every request a run sent, so
// the run cannot tell it from no limiter: any count the target admits
// that is not over the requests sent agrees with it within the terms.
const AdmitsAllNote = "this model admits every request the run sent: it cannot be told from no limiter at this load; send faster or longer than it admits"

// admitsAll reports whether a model that expects expected admissions of
// sent requests admits them all.
func admitsAll(expected, sent int64) bool { return sent > 0 && expected >= sent }

// Total is the tolerance: max(Jitter, Shift) + Rounding + Unknown.
func (t Tolerance) Total() int64 { return max(t.Jitter, t.Shift) + t.Rounding + t.Unknown }

// Dominant names the larger of the two timing terms: "jitter" (the
// latency's spread) or "shift" (the target deciding after the send).
func (t Tolerance) Dominant() string {
	if t.Shift > t.Jitter {
		return "shift"
	}
	return "jitter"
}

// String shows the sum: "±4 = max(jitter 2, shift 3) + rounding 1 +
// unknown 0".
func (t Tolerance) String() string {
	return fmt.Sprintf("±%d = max(jitter %d, shift %d) + rounding %d + unknown %d", t.Total(), t.Jitter, t.Shift, t.Rounding, t.Unknown)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Explain shows the tolerance a document recorded (total) with its terms,
// and which timing term dominated, in words: "shift" means the target
// decided well after the send (requests queued), so replaying at the
// sends alone would have misjudged; "jitter" the spread of the latency;
// neither when both are 0.
func (t Tolerance) Explain(total int64) string {
	s := fmt.Sprintf("tolerance ±%d = max(jitter %d, shift %d) + rounding %d + unknown %d", total, t.Jitter, t.Shift, t.Rounding, t.Unknown)
	switch {
	case t.Shift > t.Jitter:
		s += "; the shift dominates: the target decided some requests well after they were sent (queued), and the count between the sends and the answers moves by that much"
	case t.Jitter > 0:
		s += "; the jitter dominates: the spread of the latency can move admissions across a refill or a window's edge"
	}
	return s
}
