package recording

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// vegeta's `vegeta attack` writes its results as a stream of gob-encoded
// Result values (github.com/tsenart/vegeta/v12, lib/results.go, read at
// v12.13.0); `vegeta encode --to json` turns them into one JSON object
// per line and `--to csv` into CSV rows. A Result is one request:
// Timestamp is when it was sent, Latency how long until its response was
// read, Code its status (0 with Error for a transport error; Error also
// holds the status line of any status outside 2xx and 3xx), Headers the
// response's headers (not the request's), BytesIn and BytesOut the bodies'
// bytes. vegeta writes each result when its response is read, so the
// sends come in roughly the order of the responses' ends.
//
// The module is not a dependency of this one: it is read with the
// standard library into a struct with vegeta's field names and types,
// which is all gob matches on. Body is left out of it, and a result too
// long to hand to gob whole has its body dropped on the way (gobskip.go),
// so a body is never kept.
type vegetaResult struct {
	Attack    string        `json:"attack"`
	Seq       uint64        `json:"seq"`
	Code      uint16        `json:"code"`
	Timestamp time.Time     `json:"timestamp"`
	Latency   time.Duration `json:"latency"`
	BytesOut  uint64        `json:"bytes_out"`
	BytesIn   uint64        `json:"bytes_in"`
	Error     string        `json:"error"`
	Method    string        `json:"method"`
	URL       string        `json:"url"`
	Headers   http.Header   `json:"headers"`
}

// vegetaCSVFields are the columns of `vegeta encode --to csv` (v12.13.0):
// timestamp (Unix ns), code, latency (ns), bytes out, bytes in,
// error, body (base64), attack, seq, method, url, headers (base64 of the
// header block); older versions wrote the first nine.
const (
	vegetaCSVFields    = 12
	vegetaCSVFieldsOld = 9
)

// readVegeta detects the encoding from the first bytes: JSON starts with
// '{', CSV with the digits of a timestamp (unless those bytes decode as
// gob), anything else is gob.
func readVegeta(br *bufio.Reader, rec *recorder) error {
	head, _ := br.Peek(64 << 10)
	head = bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(head) == 0:
		return errors.New("empty: no vegeta result in it")
	case head[0] == '{':
		return readVegetaJSON(br, rec)
	case head[0] >= '0' && head[0] <= '9':
		var v vegetaResult
		if decodeGob(gob.NewDecoder(bytes.NewReader(head)), &v) != nil {
			return readVegetaCSV(br, rec)
		}
	}
	return readVegetaGob(br, rec)
}

// decodeGob decodes one vegeta result. Headers starts as an empty map:
// gob sizes a nil map by the count the stream claims, before it reads a
// single entry, so a garbled count could ask for terabytes; into a map
// that exists it adds the entries it actually reads. gob omits an empty
// map, so no headers and empty headers read the same: as none.
func decodeGob(dec *gob.Decoder, v *vegetaResult) error {
	*v = vegetaResult{Headers: http.Header{}}
	err := dec.Decode(v)
	if len(v.Headers) == 0 {
		v.Headers = nil
	}
	return err
}

func readVegetaGob(br *bufio.Reader, rec *recorder) error {
	dec := gob.NewDecoder(newGobSkip(br))
	var v vegetaResult
	for n := int64(1); ; n++ {
		if n > MaxLines {
			return &ceilingError{msg: fmt.Sprintf("more than %s records, the ceiling of a recording; judge it in parts", words.Commas(int64(MaxLines)))}
		}
		err := decodeGob(dec, &v)
		if err == io.EOF && n > 1 {
			return nil
		}
		if err == io.EOF {
			return errors.New("record 1: not a vegeta result (gob, JSON or CSV from vegeta attack or encode)")
		}
		if err != nil {
			var skip *errGobSkip
			var ce *ceilingError
			if errors.As(err, &ce) {
				return ce
			}
			if errors.As(err, &skip) {
				return fmt.Errorf("record %d: %s", n, skip.msg)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("record %d is truncated: the gob stream of vegeta attack ends inside it", n)
			}
			return fmt.Errorf("record %d: not a vegeta result (gob, JSON or CSV from vegeta attack or encode): %v", n, err)
		}
		if err := rec.addVegeta(&v); err != nil {
			return recordPos("record", n, err)
		}
	}
}

func readVegetaJSON(br *bufio.Reader, rec *recorder) error {
	sc := bufio.NewScanner(rec.lineGuard(br))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var n int64
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var v vegetaResult
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("line %d: %v", n, vegetaJSONWhy(err))
		}
		if err := rec.addVegeta(&v); err != nil {
			return recordPos("line", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d is longer than %d KiB (a body that large? vegeta attack -max-body bounds them)", n+1, maxLine>>10)
		}
		return fmt.Errorf("read after line %d: %w", n, err)
	}
	return nil
}

func vegetaJSONWhy(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "not JSON: " + se.Error()
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s, not what vegeta writes", te.Field, te.Value)
	}
	return err.Error()
}

func readVegetaCSV(br *bufio.Reader, rec *recorder) error {
	lim := &recordLimit{r: rec.lineGuard(br)}
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	last := 0
	for {
		f, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, errRecordTooLong) {
				return fmt.Errorf("after line %d: a CSV record longer than %d KiB (an unclosed quote?): not vegeta's CSV", last, maxLine>>10)
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("line %d: not vegeta's CSV: %v", pe.StartLine, pe.Err)
			}
			return fmt.Errorf("after line %d: %w", last, err)
		}
		lim.start = cr.InputOffset()
		line, _ := cr.FieldPos(0)
		last = line
		if len(f) != vegetaCSVFields && len(f) != vegetaCSVFieldsOld {
			return fmt.Errorf("line %d has %d fields; vegeta's CSV has %d (timestamp, code, latency, bytes out, bytes in, error, body, attack, seq, method, url, headers)",
				line, len(f), vegetaCSVFields)
		}
		v, err := vegetaCSV(f)
		if err != nil {
			return fmt.Errorf("line %d: %v", line, err)
		}
		if err := rec.addVegeta(&v); err != nil {
			return recordPos("line", int64(line), err)
		}
	}
}

// vegetaCSV reads one CSV row of vegeta encode --to csv.
func vegetaCSV(f []string) (vegetaResult, error) {
	var v vegetaResult
	num := func(i int, what string, bits int) (uint64, error) {
		n, err := strconv.ParseUint(f[i], 10, bits)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a number of %d bits or fewer", what, f[i], bits)
		}
		return n, nil
	}
	ts, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return v, fmt.Errorf("timestamp %q is not Unix nanoseconds", f[0])
	}
	v.Timestamp = time.Unix(0, ts)
	code, err := num(1, "code", 16)
	if err != nil {
		return v, err
	}
	v.Code = uint16(code)
	lat, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return v, fmt.Errorf("latency %q is not nanoseconds", f[2])
	}
	v.Latency = time.Duration(lat)
	if v.BytesOut, err = num(3, "bytes out", 64); err != nil {
		return v, err
	}
	if v.BytesIn, err = num(4, "bytes in", 64); err != nil {
		return v, err
	}
	v.Error = f[5]
	v.Attack = f[7]
	if v.Seq, err = num(8, "seq", 64); err != nil {
		return v, err
	}
	if len(f) == vegetaCSVFieldsOld {
		return v, nil
	}
	v.Method, v.URL = f[9], f[10]
	if f[11] != "" {
		raw, err := base64.StdEncoding.DecodeString(f[11])
		if err != nil {
			return v, errors.New("the headers column is not base64")
		}
		h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
		if err != nil && !(errors.Is(err, io.EOF) && len(h) > 0) {
			return v, fmt.Errorf("the headers column is not a header block: %v", err)
		}
		v.Headers = http.Header(h)
		if v.Headers == nil {
			v.Headers = http.Header{}
		}
	}
	return v, nil
}

// recordPos puts the position before what went wrong; an error about the
// flags stays as it is.
func recordPos(what string, n int64, err error) error {
	var fe *flagError
	if errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("%s %d: %w", what, n, err)
}

// addVegeta takes one vegeta result.
func (r *recorder) addVegeta(v *vegetaResult) error {
	if v.Timestamp.IsZero() {
		return errors.New("a result without a timestamp")
	}
	if v.Latency < 0 {
		return fmt.Errorf("a negative latency (%s)", v.Latency)
	}
	send, err := unixNano(v.Timestamp)
	if err != nil {
		return err
	}
	q := recorded{sendNs: send, doneNs: send + int64(v.Latency), status: int(v.Code), method: v.Method, url: v.URL}
	if q.doneNs < send {
		return fmt.Errorf("a latency of %s is longer than a recording may span (%s)", v.Latency, words.Span(tally.MaxDuration))
	}
	if v.Code == 0 {
		q.errKind = errorKind(v.Error)
	}
	if v.Headers != nil {
		q.header = canonicalHeader(v.Headers)
		if tag := r.o.IdentityTag; tag != "" {
			if vs := q.header[http.CanonicalHeaderKey(tag)]; len(vs) > 0 {
				q.identity, q.hasIdentity = strings.Join(vs, ", "), true
			}
		}
	}
	r.bytesIn = addSat(r.bytesIn, int64(min(v.BytesIn, 1<<53)))
	r.bytesOut = addSat(r.bytesOut, int64(min(v.BytesOut, 1<<53)))
	return r.add(&q)
}

// canonicalHeader returns h with its keys in canonical form, as
// net/http keeps them (vegeta's JSON may have been edited by hand).
func canonicalHeader(h http.Header) http.Header {
	for k := range h {
		if http.CanonicalHeaderKey(k) != k {
			c := make(http.Header, len(h))
			for k, vs := range h {
				ck := http.CanonicalHeaderKey(k)
				c[ck] = append(c[ck], vs...)
			}
			return c
		}
	}
	return h
}

var errRecordTooLong = errors.New("CSV record too long")

// recordLimit stops a CSV reader that reads more than maxLine bytes past
// the end of its last record (an unclosed quote would otherwise take the
// whole input into one field).
type recordLimit struct {
	r     io.Reader
	read  int64 // bytes read
	start int64 // input offset at the end of the last record
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.read-l.start > maxLine+64<<10 {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
