package recording

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// k6's `k6 run --out json=FILE` (https://grafana.com/docs/k6/latest/results-output/real-time/json/)
// is NDJSON: one object per line, either a metric's declaration,
//
//	{"type":"Metric","data":{"type":"trend","contains":"time",...},"metric":"http_req_duration"}
//
// or one sample of a metric,
//
//	{"metric":"http_req_duration","type":"Point","data":{"time":"2026-12-02T12:00:00.123456789Z","value":1.52,"tags":{"status":"200","method":"GET","url":"http://...","name":"http://...",...}}}
//
// (older versions write "metric" last). Every HTTP request gives a point
// of http_reqs (value 1), http_req_duration (its duration in ms) and the
// other http_req_* timings, all at the time the request ended (k6's
// Trail.EndTime) and with the request's tags: status ("0" for a transport
// error, which also gets error and error_code), method, url, name and
// the ones the script sets. http_req_duration is the one record per
// request read here: the send is its time minus its value (the duration
// counts sending, waiting and receiving; the connection's setup before it
// is not latency of the limiter's decision). dropped_iterations points
// count iterations the executor could not start (no free VU); data_sent
// and data_received count the bytes on the wire.
//
// k6 itself is not a dependency of this project nor a tool of its tests
// (its licence rules it out): the format is read from its documentation,
// and the tests write it from that schema.

// k6 metrics this reader uses; points of every other metric are skipped.
const (
	k6Duration = "http_req_duration"
	k6Reqs     = "http_reqs"
	k6Dropped  = "dropped_iterations"
	k6Sent     = "data_sent"
	k6Received = "data_received"
)

var k6Used = map[string]bool{k6Duration: true, k6Reqs: true, k6Dropped: true, k6Sent: true, k6Received: true, K6HeaderMetric: true}

// k6Line is one line of k6's JSON output, as far as it is read.
type k6Line struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		Time  time.Time         `json:"time"`
		Value *float64          `json:"value"`
		Tags  map[string]string `json:"tags"`
	} `json:"data"`
}

var (
	k6Prefix = []byte(`{"metric":"`)
	k6Suffix = []byte(`,"metric":"`)
)

// k6MetricName finds the metric of a line without decoding it, where
// k6 puts it: first (`{"metric":"NAME",...`) or last (`...,"metric":"NAME"}`).
// ok is false when it is not plainly there; the line is then decoded.
func k6MetricName(line []byte) (name []byte, ok bool) {
	if rest, found := bytes.CutPrefix(line, k6Prefix); found {
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return rest[:i], true
		}
		return nil, false
	}
	if !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, false
	}
	i := bytes.LastIndex(line, k6Suffix)
	if i < 0 || i+len(k6Suffix) > len(line)-2 {
		return nil, false
	}
	name = line[i+len(k6Suffix) : len(line)-2]
	if bytes.ContainsAny(name, `"\`) {
		return nil, false
	}
	return name, true
}

func readK6(br *bufio.Reader, rec *recorder) error {
	sc := bufio.NewScanner(rec.lineGuard(br))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var (
		n          int64
		line       k6Line
		durations  int64
		reqs       int64
		q          recorded
		hdr        = http.Header{}
		identity   = rec.o.IdentityTag
		headerSeen bool
	)
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if b[0] != '{' || b[len(b)-1] != '}' {
			return fmt.Errorf("line %d is not a JSON object (k6 --out json writes one per line)", n)
		}
		if name, ok := k6MetricName(b); ok {
			if string(name) == k6Reqs {
				reqs++ // the same requests as http_req_duration: only counted
				continue
			}
			if !k6Used[string(name)] {
				continue
			}
		}
		line.Type, line.Metric = "", ""
		line.Data.Time, line.Data.Value = time.Time{}, nil
		clear(line.Data.Tags)
		if err := json.Unmarshal(b, &line); err != nil {
			return fmt.Errorf("line %d: %v", n, jsonWhy(err))
		}
		if line.Type != "Point" || !k6Used[line.Metric] {
			continue
		}
		if line.Metric == k6Reqs {
			reqs++
			continue
		}
		d := &line.Data
		if d.Value == nil || math.IsNaN(*d.Value) || math.IsInf(*d.Value, 0) || *d.Value < 0 {
			return fmt.Errorf("line %d: a %s point without a value of 0 or more", n, line.Metric)
		}
		v := *d.Value
		if d.Time.IsZero() {
			return fmt.Errorf("line %d: a %s point without a time", n, line.Metric)
		}
		switch line.Metric {
		case k6Dropped:
			rec.dropped = addSat(rec.dropped, int64(math.Round(min(v, 1e15))))
			continue
		case k6Sent:
			rec.bytesOut = addSat(rec.bytesOut, int64(math.Round(min(v, 1e15))))
			continue
		case k6Received:
			rec.bytesIn = addSat(rec.bytesIn, int64(math.Round(min(v, 1e15))))
			continue
		}
		st, ok := d.Tags["status"]
		if !ok {
			return fmt.Errorf("line %d: a %s point without a status tag (keep k6's status system tag, --system-tags)", n, line.Metric)
		}
		status, err := strconv.Atoi(st)
		if err != nil || status < 0 {
			return fmt.Errorf("line %d: status tag %q is not an HTTP status", n, st)
		}
		done, err := unixNano(d.Time)
		if err != nil {
			return fmt.Errorf("line %d: %v", n, err)
		}
		if line.Metric == K6HeaderMetric {
			clear(hdr)
			for k, val := range d.Tags {
				if k != "status" && val != "" {
					hdr[http.CanonicalHeaderKey(k)] = []string{val}
				}
			}
			headerSeen = true
			if err := rec.inspect(status, hdr, d.Time); err != nil {
				return lineErr(n, err)
			}
			continue
		}
		durations++
		if v > float64(tally.MaxDuration/time.Millisecond) {
			return fmt.Errorf("line %d: a duration of %v ms is longer than a recording may span (%s)", n, v, words.Span(tally.MaxDuration))
		}
		q = recorded{doneNs: done, sendNs: done - int64(math.Round(v*1e6)), status: status,
			method: d.Tags["method"], url: d.Tags["url"]}
		if q.url == "" {
			q.url = d.Tags["name"]
		}
		if status == 0 {
			q.errKind = k6ErrorKind(d.Tags["error_code"], d.Tags["error"])
		}
		if identity != "" {
			q.identity, q.hasIdentity = d.Tags[identity]
		}
		if err := rec.add(&q); err != nil {
			return lineErr(n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d is longer than %d KiB: not k6 --out json", n+1, maxLine>>10)
		}
		return fmt.Errorf("read after line %d: %w", n, err)
	}
	if durations == 0 {
		if reqs > 0 {
			return fmt.Errorf("%d http_reqs points but no http_req_duration: this reader needs k6's http_req_duration points (one per request)", reqs)
		}
		if headerSeen {
			return fmt.Errorf("%s points but no http_req_duration: no request to judge", K6HeaderMetric)
		}
		return errors.New("no http_req_duration point: not the output of k6 run --out json, or no HTTP request was made")
	}
	return nil
}

// lineErr puts the line before what went wrong with it; an error about
// the flags stays as it is.
func lineErr(n int64, err error) error {
	var fe *flagError
	if errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("line %d: %w", n, err)
}

// jsonWhy is a decoding error in a few words, without the Go types.
func jsonWhy(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "not JSON: " + se.Error()
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s, not what k6 writes", te.Field, te.Value)
	}
	return err.Error()
}

// k6ErrorKind names a transport error of k6 (status 0) as load's errors
// table does, from its error_code
// (https://grafana.com/docs/k6/latest/javascript-api/error-codes/), else
// its message.
func k6ErrorKind(code, msg string) string {
	switch n, _ := strconv.Atoi(code); {
	case n == 1050 || n == 1211:
		return "timeout"
	case n >= 1100 && n < 1200:
		return "dns"
	case n == 1212:
		return "connection refused"
	case n == 1201 || n == 1220:
		return "connection reset"
	case n == 1210 || n == 1213:
		return "dial"
	}
	return errorKind(msg)
}

// errorKind names a transport error from its message (a recording keeps
// no Go error to classify).
func errorKind(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case m == "":
		return "other"
	case strings.Contains(m, "connection refused"):
		return "connection refused"
	case strings.Contains(m, "timeout"), strings.Contains(m, "deadline exceeded"):
		return "timeout"
	case strings.Contains(m, "no such host"), strings.Contains(m, "lookup "):
		return "dns"
	case strings.Contains(m, "connection reset"), strings.Contains(m, "broken pipe"):
		return "connection reset"
	case strings.Contains(m, "eof"):
		return "eof"
	case strings.Contains(m, "dial"):
		return "dial"
	}
	return "other"
}
