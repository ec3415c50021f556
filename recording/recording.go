package recording

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/judge"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// The tools whose recordings Read reads (tally.Result.Source).
const (
	SourceK6     = tally.SourceK6
	SourceVegeta = tally.SourceVegeta
)

// Sources are the recordings Read reads, in the order --from lists them.
var Sources = []string{SourceK6, SourceVegeta}

// DefaultReorderWindow is how far past the longest latency seen the
// reorder buffer of a recording waits before it judges an arrival (see
// ReadRecording): k6's default request timeout is 60s and vegeta's 30s,
// so a request that timed out at the default still arrives in time.
const DefaultReorderWindow = 60 * time.Second

// maxRecordedLatency is the ceiling of a recording's latency histograms;
// longer latencies count as this much there (the verdict uses them as they
// are).
const maxRecordedLatency = tally.MaxTimeout + time.Minute

// maxLine is the longest line of a k6 or vegeta NDJSON recording.
const maxLine = 1 << 20

// RecordOptions say how to read a recording and what to judge.
type RecordOptions struct {
	Source string // SourceK6 or SourceVegeta
	// Name is the recording in error messages: the file, or "stdin".
	Name string
	// IdentityTag names what carries the identity, for one limiter per
	// identity: k6's tag of that name on each request, vegeta's response
	// header of that name. "" judges every request against one limiter.
	IdentityTag string

	Expect       *judge.Expectation // nil: no verdict on the admitted count
	ExpectStatus []int              // statuses that are not failures (default 200, 429)
	// LimitedStatus are statuses besides 429 that are the limiter's
	// refusals (--limited-status).
	LimitedStatus []int
	MaxFailed     float64 // threshold on failed/completed, 0..1
	NoMaxFailed   bool    // no MaxFailed check
	Thresholds    []judge.Threshold
	HeaderMode    string // tally.HeadersFail (default), HeadersWarn or HeadersOff

	// ReorderWindow bounds the reorder buffer (DefaultReorderWindow).
	ReorderWindow time.Duration
}

func (o RecordOptions) withDefaults() (RecordOptions, error) {
	switch o.Source {
	case SourceK6, SourceVegeta:
	default:
		return o, exitcode.Usagef("--from %q: use %s", o.Source, strings.Join(Sources, " or "))
	}
	if o.Name == "" {
		o.Name = "the recording"
	}
	switch o.HeaderMode {
	case "":
		o.HeaderMode = tally.HeadersFail
	case tally.HeadersFail, tally.HeadersWarn, tally.HeadersOff:
	default:
		return o, exitcode.Usagef("--headers %q: use fail (a broken rate limit header fails the verdict), warn or off", o.HeaderMode)
	}
	if len(o.ExpectStatus) == 0 {
		o.ExpectStatus = tally.DefaultExpectStatus
	}
	if _, err := judge.NewRule(o.LimitedStatus); err != nil {
		return o, exitcode.Usagef("--limited-status %v", err)
	}
	for _, s := range o.ExpectStatus {
		if !tally.ValidStatus(s) {
			return o, exitcode.Usagef("--expect-status %d is not an HTTP status (100-999)", s)
		}
	}
	if o.MaxFailed < 0 || o.MaxFailed > 1 || o.MaxFailed != o.MaxFailed {
		return o, exitcode.Usagef("--max-failed must be between 0%% and 100%%")
	}
	if o.ReorderWindow == 0 {
		o.ReorderWindow = DefaultReorderWindow
	}
	if o.ReorderWindow < 0 || o.ReorderWindow > tally.MaxDuration {
		return o, exitcode.Usagef("--reorder-window %s: want a positive duration of at most %s", o.ReorderWindow, words.Span(tally.MaxDuration))
	}
	if o.IdentityTag != "" && strings.TrimSpace(o.IdentityTag) == "" {
		return o, exitcode.Usagef("--identity-tag is blank; name the tag (k6) or response header (vegeta) that carries the identity")
	}
	return o, nil
}

// Validate checks o as Read would, before anything is read.
func (o RecordOptions) Validate() error {
	_, err := o.withDefaults()
	return err
}

// Read reads a recording of another tool and judges it as a run
// of load would be judged: the same counts, histograms, timeline, header
// checks, thresholds and verdict on the admitted count, in a load Result
// whose Source names the tool. What the recording lacks is said, not
// invented: its due times are unknown (the latency from the due time is
// the latency from the send), dropped iterations are those it records,
// and the header checks are skipped when it carries no response headers.
//
// The recording is read once, in constant memory apart from the latency
// histograms, the timeline (one entry per second), one pair of models
// per identity and the reorder buffer. k6 writes a request when it ends,
// vegeta when its response is read, so the sends come out of order; the
// replay takes them in order from a buffer that holds each arrival until
// the recording's clock (the latest response end read so far) has passed
// its send by the longest latency seen so far plus the window
// (RecordOptions.ReorderWindow), and its end by the window. A response
// that arrives later than that cannot be judged in order and is an error
// naming its line; a request without a status (a transport error), which
// the replay does not take, is counted wherever it comes.
//
// A recording may be gzipped (k6 --out json=file.gz). Every error is exit
// 2 and one line naming the recording and the line (or vegeta record).
func Read(r io.Reader, o RecordOptions) (*tally.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	rec := newRecorder(o)
	br := bufio.NewReaderSize(r, 256<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		in := &countReader{r: br}
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, exitcode.Usagef("%s: not a readable gzip file: %v", words.Printable(o.Name), err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(&inflateGuard{z: zr, in: in, tripped: &rec.ceiling}, 256<<10)
	}
	switch o.Source {
	case SourceK6:
		err = readK6(br, rec)
	default:
		err = readVegeta(br, rec)
	}
	if err == nil {
		err = rec.flush()
	}
	if rec.ceiling != nil {
		err = rec.ceiling
	}
	if err != nil {
		return nil, recordErr(o.Name, err)
	}
	res, err := rec.result()
	if err != nil {
		return nil, recordErr(o.Name, err)
	}
	return res, nil
}

// recordErr makes err one exit-2 line naming the recording; an error that
// is already a usage error about a flag keeps its words.
func recordErr(name string, err error) error {
	var ue *flagError
	if errors.As(err, &ue) {
		return exitcode.Usagef("%s", ue.msg)
	}
	var ce *ceilingError
	if errors.As(err, &ce) {
		return exitcode.Usagef("%s: %s", words.Printable(name), ce.msg)
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	return exitcode.Usagef("%s: %s", words.Printable(name), msg)
}

// flagError is a refusal that is about the flags, not the recording's
// contents (--expect auto without headers, --identity-tag without them).
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

func flagErrorf(format string, args ...any) error {
	return &flagError{msg: fmt.Sprintf(format, args...)}
}

// recorded is one request of a recording, as a parser reads it.
type recorded struct {
	sendNs, doneNs int64 // wall clock, Unix ns
	status         int   // 0: no status (a transport error)
	errKind        string
	identity       string
	hasIdentity    bool
	header         http.Header // the response's headers; nil: not recorded
	method, url    string
}

// recorder folds the requests of a recording into a Result, judging them
// through the reorder buffer as they go.
type recorder struct {
	o     RecordOptions
	st    *tally.Statuses
	t     *tally.Tally // the counts, histograms, timeline and headers
	zeros *tally.Zeros // what each identity's Retry-After: 0 was worth

	sent              int64
	bytesIn, bytesOut int64
	dropped           int64

	method, url         string
	otherURL, otherMeth bool

	ids        map[string]int
	noIdentity int64

	headered bool   // the recording carries response headers
	policy   string // the first valid RateLimit-Policy, for --expect auto

	// the reorder buffer and the replay
	bySend, byDone arrivalHeap
	clock          int64 // latest response end read, Unix ns
	maxLat         int64 // longest latency read, ns
	firstSend      int64 // earliest and latest send read (bound the span)
	lastSeen       int64
	started        bool
	startNs        int64 // send of the first request judged: the run's start
	lastSend       int64 // send of the last arrival released to the replay
	lastDone       int64
	maxDone        int64
	judge          *judge.Stream

	ceiling error // a ceiling the input passed (guard.go)
}

func newRecorder(o RecordOptions) *recorder {
	rule, _ := judge.NewRule(o.LimitedStatus) // checked by withDefaults
	st := tally.NewStatuses(rule, o.ExpectStatus)
	return &recorder{
		o: o, st: st, zeros: tally.NewZeros(1),
		t:      tally.New(st, int64(maxRecordedLatency/time.Microsecond)),
		ids:    map[string]int{},
		bySend: arrivalHeap{}, byDone: arrivalHeap{done: true},
		maxDone: math.MinInt64,
	}
}

// inspect checks the rate limit headers of one response as a load run
// does, and gives --expect auto the first valid RateLimit-Policy.
func (r *recorder) inspect(status int, h http.Header, at time.Time) error {
	r.headered = true
	if status == 0 {
		return nil
	}
	r.t.Inspect(status, h, at)
	if r.policy == "" && r.t.FirstPolicy() != "" {
		r.policy = r.t.FirstPolicy()
		if r.judge != nil {
			return r.judge.SetPolicy(r.policy)
		}
	}
	return nil
}

// add takes one request of the recording.
func (r *recorder) add(q *recorded) error {
	if q.doneNs < q.sendNs {
		return fmt.Errorf("the response ends before the request was sent")
	}
	if q.sendNs <= 0 {
		return fmt.Errorf("the request was sent before 1970")
	}
	latNs := q.doneNs - q.sendNs
	if latNs > int64(tally.MaxDuration) {
		return fmt.Errorf("a latency of %s is longer than a recording may span (%s)", time.Duration(latNs), words.Span(tally.MaxDuration))
	}
	if r.sent == 0 {
		r.firstSend, r.lastSeen = q.sendNs, q.sendNs
		r.method, r.url = q.method, q.url
	}
	if lo, hi := min(r.firstSend, q.sendNs), max(r.lastSeen, q.sendNs); hi-lo >= int64(tally.MaxDuration) {
		other := r.firstSend
		if q.sendNs == lo {
			other = r.lastSeen
		}
		return fmt.Errorf("sent at %s, %s or more from the request sent at %s: a recording spans less than %s",
			stamp(q.sendNs), words.Span(tally.MaxDuration), stamp(other), words.Span(tally.MaxDuration))
	}
	r.firstSend, r.lastSeen = min(r.firstSend, q.sendNs), max(r.lastSeen, q.sendNs)
	if q.url != r.url {
		r.otherURL = true
	}
	if q.method != r.method {
		r.otherMeth = true
	}
	status, kind := q.status, q.errKind
	if status != 0 && !tally.ValidStatus(status) {
		status, kind = 0, "malformed response"
	}
	r.sent++
	// due = send: both latencies are the one from the send
	r.t.Count(status, kind, time.Duration(latNs), time.Duration(latNs))
	zero := false
	if q.header != nil {
		if err := r.inspect(status, q.header, time.Unix(0, q.doneNs)); err != nil {
			return err
		}
		zero = status != 0 && r.t.Zero()
	} else if status != 0 && r.o.Source == SourceVegeta && r.o.IdentityTag != "" {
		return flagErrorf("--identity-tag %s: %s carries responses without headers (older vegeta versions record none), so no response header can name the identity; drop --identity-tag", words.Printable(r.o.IdentityTag), words.Printable(r.o.Name))
	}
	id := 0
	if r.o.IdentityTag != "" {
		if !q.hasIdentity {
			r.noIdentity++
		}
		k, ok := r.ids[q.identity]
		if !ok {
			if len(r.ids) >= tally.MaxIdentities {
				return fmt.Errorf("more than %s identities (%s values): the ceiling of --identities", words.Commas(tally.MaxIdentities), words.Printable(r.o.IdentityTag))
			}
			k = len(r.ids)
			r.ids[q.identity] = k
		}
		id = k
	}
	if status != 0 {
		r.zeros.Grow(id)
		r.zeros.Observe(r.t, id, q.sendNs, q.doneNs, r.st.Rule.Limited(status), zero)
	}
	r.clock = max(r.clock, q.doneNs)
	r.maxLat = max(r.maxLat, latNs)
	r.maxDone = max(r.maxDone, q.doneNs)
	a := judge.Arrival{Identity: id, DueNs: q.sendNs, SendNs: q.sendNs, DoneNs: q.doneNs, Status: status}
	// Later than the buffer allowed (requests sent after it were judged):
	// what only counts is counted where it comes; the replay of its
	// identity may have moved past it, which is an error.
	if r.started && q.sendNs < r.lastSend {
		if q.sendNs < r.startNs {
			return r.late(latNs)
		}
		if err := r.releaseSend(a); err != nil {
			return r.lateOr(err, latNs)
		}
	} else {
		r.bySend.push(a)
		if r.bySend.len() > MaxReorder {
			return r.full(latNs)
		}
	}
	if !r.o.Expect.Judges() {
		return r.release(false)
	}
	if r.started && q.doneNs < r.lastDone {
		if err := r.releaseDone(a); err != nil {
			return r.lateOr(err, latNs)
		}
	} else {
		r.byDone.push(a)
		if r.byDone.len() > MaxReorder {
			return r.full(latNs)
		}
	}
	return r.release(false)
}

// MaxReorder bounds the requests the reorder buffer holds at once (about
// 80 bytes each): a recording whose longest latency holds more back is
// refused instead of filling memory.
const MaxReorder = 4_000_000

func (r *recorder) full(latNs int64) error {
	return fmt.Errorf("more than %s requests wait in the reorder buffer (the longest latency read is %s, --reorder-window %s): lower --reorder-window, or judge the recording in parts",
		words.Commas(MaxReorder), time.Duration(r.maxLat).Round(time.Millisecond), r.o.ReorderWindow)
}

func (r *recorder) lateOr(err error, latNs int64) error {
	if errors.Is(err, judge.ErrOutOfOrder) {
		return r.late(latNs)
	}
	return err
}

func (r *recorder) late(latNs int64) error {
	return fmt.Errorf("this response (latency %s) arrives after requests sent later were judged: the reorder buffer waits for the longest latency read before it (%s) + %s; raise --reorder-window",
		time.Duration(latNs).Round(time.Millisecond), time.Duration(r.maxLat).Round(time.Millisecond), r.o.ReorderWindow)
}

// release hands the replay what the buffer may let go: arrivals sent
// before clock - (longest latency + window), responses ended before
// clock - window; at the end (all), everything.
func (r *recorder) release(all bool) error {
	w := int64(r.o.ReorderWindow)
	for r.bySend.len() > 0 && (all || r.bySend.min() < r.clock-r.maxLat-w) {
		if err := r.releaseSend(r.bySend.pop()); err != nil {
			return err
		}
	}
	for r.started && r.byDone.len() > 0 && (all || r.byDone.min() < r.clock-w) {
		if err := r.releaseDone(r.byDone.pop()); err != nil {
			return err
		}
	}
	return nil
}

// releaseDone gives one response to the replay at its end.
func (r *recorder) releaseDone(a judge.Arrival) error {
	r.lastDone = max(r.lastDone, a.DoneNs)
	a.SendNs -= r.startNs
	a.DueNs -= r.startNs
	a.DoneNs -= r.startNs
	return r.judge.Done(a)
}

// releaseSend counts one arrival in the timeline and gives it to the
// replay at its send; the first one released is the run's start.
func (r *recorder) releaseSend(a judge.Arrival) error {
	if !r.started {
		r.started, r.startNs = true, a.SendNs
		if r.o.Expect.Judges() {
			r.judge = judge.NewStream(*r.o.Expect, r.startNs/1e6)
			if r.policy != "" {
				if err := r.judge.SetPolicy(r.policy); err != nil {
					return err
				}
			}
		}
	}
	r.lastSend = max(r.lastSend, a.SendNs)
	a.SendNs -= r.startNs
	a.DueNs -= r.startNs
	a.DoneNs -= r.startNs
	r.t.Tick(a.SendNs/1e9, a.Status)
	if r.judge != nil {
		return r.judge.Send(a)
	}
	return nil
}

// flush releases everything once the recording is read.
func (r *recorder) flush() error {
	if r.sent == 0 {
		return fmt.Errorf("no request in it")
	}
	return r.release(true)
}

// result is the recording as a load run's result, judged.
func (r *recorder) result() (*tally.Result, error) {
	o := r.o
	if o.Expect != nil && o.Expect.Auto && !o.Expect.Implicit && !r.headered {
		return nil, flagErrorf("--expect auto needs RateLimit-Policy, which %s lacks (%s); give --expect MODEL, e.g. token-bucket:burst=10,rate=5/s", words.Printable(o.Name), r.noHeadersWhy())
	}
	res := &tally.Result{
		Kind: tally.Kind, Version: 1, Source: o.Source,
		Target: secret.URL(r.url), Method: r.method, StartedAt: time.Unix(0, r.startNs).UTC(),
		Planned: addSat(r.sent, r.dropped), Sent: r.sent, LimitedStatus: r.st.Rule.Declared(),
		Dropped: r.dropped, DroppedNoVU: r.dropped,
		BytesIn: r.bytesIn, BytesOut: r.bytesOut,
	}
	if o.IdentityTag != "" {
		res.Identities = len(r.ids)
	}
	notRecorded := ""
	if !r.headered {
		notRecorded = r.noHeadersWhy()
	}
	r.t.Fill(res, -1, o.HeaderMode, notRecorded)
	// the duration of a run whose n sends span the first to the last:
	// n intervals of span/(n-1), as load's n sends at rate R last n/R
	span := float64(r.lastSend-r.startNs) / 1e9
	if r.sent > 1 && span > 0 {
		res.DurationS = span * float64(r.sent) / float64(r.sent-1)
		res.RatePerS = float64(res.Planned) / res.DurationS
		res.Rate = rate.Rate{Count: math.Round(res.RatePerS*100) / 100, Per: time.Second}.String()
		res.AchievedRate = float64(r.sent) / res.DurationS
	}
	res.ElapsedS = float64(r.maxDone-r.startNs) / 1e9
	res.Shares()
	var ths []judge.Threshold
	if !o.NoMaxFailed {
		ths = append(ths, judge.MaxFailed(o.MaxFailed))
	}
	j := tally.Judging{Thresholds: append(ths, o.Thresholds...)}
	if r.judge != nil {
		x := r.judge.Finish(max(res.Identities, 1), res.Latency.P99, res.Headers.PolicyValue)
		j.Expect = &x
	}
	res.Notes = r.recordingNotes(res)
	res.Settle(j)
	return res, nil
}

// K6HeaderMetric is the custom k6 metric whose points carry a response's
// rate limit headers as tags (docs/load.md: "Already using k6 or vegeta?").
const K6HeaderMetric = "ratelimit_headers"

// noHeadersWhy says why the recording has no headers and how to record
// them.
func (r *recorder) noHeadersWhy() string {
	if r.o.Source == SourceK6 {
		return "k6 records no response headers; to check them, add a Counter named " + K6HeaderMetric +
			" in the script and count each response with its RateLimit, RateLimit-Policy, Retry-After and Cache-Control headers and its status as tags (see docs/load.md, \"Already using k6 or vegeta?\")"
	}
	return "this vegeta recording carries no response headers (older vegeta versions record none; v12.13.0 records them in every result)"
}

// recordingNotes say what the recording could not tell.
func (r *recorder) recordingNotes(res *tally.Result) []string {
	var notes []string
	n := fmt.Sprintf("recorded by %s: the due times are not in the recording, so the latency from the due time is the latency from the send and the lateness is unknown", r.o.Source)
	if r.o.Source == SourceVegeta {
		n += "; vegeta records no dropped iterations (when it falls behind it sends late)"
	}
	notes = append(notes, n)
	if r.otherURL || r.otherMeth {
		notes = append(notes, fmt.Sprintf("the requests went to more than one method or URL (the first: %s %s); the verdict takes them as one limited endpoint", words.Printable(r.method), words.Printable(secret.URL(r.url))))
	}
	if r.o.IdentityTag != "" && r.noIdentity > 0 {
		what := "tag"
		if r.o.Source == SourceVegeta {
			what = "response header"
		}
		notes = append(notes, fmt.Sprintf("%d of %d requests carry no %s %s: they are judged as one more identity", r.noIdentity, r.sent, words.Printable(r.o.IdentityTag), what))
	}
	if r.headered && res.Headers.Responses != res.Responses {
		notes = append(notes, fmt.Sprintf("headers were recorded for %d of %d responses; the header checks count those", res.Headers.Responses, res.Responses))
	}
	return notes
}

// addSat adds two counts of at least 0, stopping at the largest int64
// instead of overflowing (a hostile recording's byte counts).
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// unixNano is t in Unix nanoseconds, for the times an int64 of them holds
// (1970 to 2262): a garbled year must not wrap around.
func unixNano(t time.Time) (int64, error) {
	if y := t.Year(); y < 1970 || y > 2261 {
		return 0, fmt.Errorf("the time %s is not between 1970 and 2261", t.UTC().Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
