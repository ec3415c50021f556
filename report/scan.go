package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/tally"
	"github.com/ratelimit-dev/ratelimit/words"
)

// Before a document is decoded, one streaming pass over its bytes (Scan)
// checks what encoding/json would otherwise happily build: a key given
// twice in one object (decoders keep the last, so {"kind":"race",
// "kind":"load"} would read as an empty load run), and a shape no
// document has, which would cost memory out of all proportion to the
// file: a string of 200 MB in a note, two million keys in a status map,
// arrays nested thousands deep. The pass holds only the keys of the
// objects it is inside, so cmd runs it on a file before reading the file
// into memory, and a forged document is refused at the cost of a buffer.
const (
	maxDepth   = 64
	maxArray   = 2_000_000  // elements of one array (a keyslot run checks up to 1,000,000 keys)
	maxMembers = 10_000     // keys of one object
	maxValues  = 50_000_000 // values in the whole document
	maxKey     = 1 << 10    // bytes of one key
	maxString  = 1 << 20    // bytes of one string, but for the bulk fields
)

// bulkStrings are the fields whose strings may be as long as a document:
// a segment's packed arrivals (about 11 bytes of base64 per request) and
// its HDR snapshots.
var bulkStrings = map[string]bool{
	"segment.arrivals": true, "segment.hdr.latency": true, "segment.hdr.latency_from_due": true, "segment.hdr.lateness": true,
}

// arrayCaps are arrays every kind keeps short, by path ([] for any
// index): a document's notes (load, probe, race, failover), a load run's
// generator reasons; objectCaps the same for the keys of objects: a load
// run's status and error counts, each second's statuses.
var (
	arrayCaps = map[string]int{"notes": tally.MaxNotes, "generator.reasons": tally.MaxReasons,
		// a fingerprint's requests: no budget allows more (checkFacts
		// bounds them by the document's own budget)
		"observations": probe.MaxBudget}
	objectCaps = map[string]int{"status": tally.MaxKeys, "errors": tally.MaxKeys, "timeline[].status": tally.MaxKeys}
)

// facts are what the pass keeps of a load document to bound its arrays by
// its own plan (checkFacts): the numbers, lengths and kind it names.
type facts struct {
	kind                        string
	hasDuration                 bool // version 2: duration_ms
	durationMs, timeoutMs, sent float64
	segmentIndex                float64
	hasSegment                  bool
	timeline, perSecond         int
	arrivals                    int64
	// a fingerprint's budget and observations
	budget       float64
	hasBudget    bool
	observations int
}

// watchedNumbers are the numbers the facts keep, by path.
var watchedNumbers = map[string]func(f *facts, v float64){
	"duration_ms":   func(f *facts, v float64) { f.durationMs, f.hasDuration = v, true },
	"timeout_ms":    func(f *facts, v float64) { f.timeoutMs = v },
	"sent":          func(f *facts, v float64) { f.sent = v },
	"segment.index": func(f *facts, v float64) { f.segmentIndex, f.hasSegment = v, true },
	"budget":        func(f *facts, v float64) { f.budget, f.hasBudget = v, true },
}

// checkFacts bounds a load document's arrays by its own plan, as report's
// validation and the merge do after decoding (tally.SpanSeconds,
// tally.MaxPackedArrivals), but before a byte of it is decoded.
func (f *facts) check() error {
	if f.kind == probe.FingerprintKind && f.hasBudget && float64(f.observations) > f.budget {
		return fieldf("observations has %s requests, more than the budget of %s the run could send: the document is inconsistent",
			words.Commas(int64(f.observations)), words.Commas(int64(f.budget)))
	}
	if f.kind != tally.Kind || !f.hasDuration {
		return nil // another kind, or a version 1 load document (upgraded, then validated)
	}
	plan := tally.Result{DurationS: f.durationMs / 1e3, TimeoutS: f.timeoutMs / 1e3}
	if f.hasSegment {
		plan.Segment = &tally.SegmentInfo{Index: int(f.segmentIndex)}
	}
	span := plan.SpanSeconds()
	for _, a := range []struct {
		name string
		n    int
	}{{"timeline", f.timeline}, {"expect.expected_per_second", f.perSecond}} {
		if float64(a.n) > span {
			return fieldf("%s has %d seconds, more than a run of %s (timeout %s) can fill (%g): the document is inconsistent",
				a.name, a.n, secondsText(plan.DurationS), secondsText(plan.TimeoutS), span)
		}
	}
	if f.sent >= 0 && f.sent < 1<<50 && f.arrivals > tally.MaxPackedArrivals(int64(f.sent)) {
		return fieldf("segment.arrivals is %s bytes, more than %s sends pack into: the document is inconsistent", words.Commas(f.arrivals), words.Commas(int64(f.sent)))
	}
	return nil
}

// errSyntax stops the pass on input that is not JSON: Decode says what is
// wrong with it in its own words.
var errSyntax = errors.New("syntax")

// Scan checks the document in r as Decode does before decoding (keys
// given once, the shape's ceilings) in one pass and constant memory
// beyond the keys of the open objects. It returns nil for input that is
// not JSON at all, which Decode then reports. Every error wraps
// ErrDocument and is one line.
func Scan(r io.Reader) error {
	err := scanShape(r)
	if errors.Is(err, errSyntax) {
		return nil
	}
	return err
}

func scanShape(r io.Reader) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	s := &shapeScanner{br: br, facts: facts{sent: -1}}
	c, err := s.skipSpace()
	if err != nil {
		return errSyntax
	}
	if err := s.value(c); err != nil {
		return err
	}
	if _, err := s.skipSpace(); err != io.EOF {
		return errSyntax
	}
	return s.facts.check()
}

// pathStep is one step of the path to the value being read: an object's
// key, or an array's index.
type pathStep struct {
	key   string
	index int
	array bool
}

type shapeScanner struct {
	br     *bufio.Reader
	path   []pathStep
	values int
	key    []byte // the key being read
	num    []byte // the number being read, when it is watched
	facts  facts
}

// pattern is where with every index written [], as the caps name paths.
func (s *shapeScanner) pattern() string {
	var b strings.Builder
	for _, st := range s.path {
		if st.array {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.key)
	}
	return b.String()
}

// where names the value being read as the duplicate-key messages do:
// "timeline[3].status", or "" at the top level.
func (s *shapeScanner) where() string {
	var b strings.Builder
	for _, st := range s.path {
		if st.array {
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(jsonKey(st.key))
	}
	return b.String()
}

func (s *shapeScanner) in() string {
	if w := s.where(); w != "" {
		return "in " + Printable(w)
	}
	return "at the top level"
}

func (s *shapeScanner) skipSpace() (byte, error) {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, nil
	}
}

// value reads the value that starts with c.
func (s *shapeScanner) value(c byte) error {
	if s.values++; s.values > maxValues {
		return fieldf("the document holds more than %s values; no document has that many", words.Commas(maxValues))
	}
	switch c {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		top := len(s.path) == 1 && !s.path[0].array && s.path[0].key == "kind"
		var into *[]byte
		if top {
			s.key = s.key[:0]
			into = &s.key
		}
		n, err := s.str(into)
		if err != nil {
			return err
		}
		if top {
			s.facts.kind = string(s.key)
		}
		if n > maxString || n > 1<<10 && len(s.path) == 2 {
			where := s.where()
			if where == "segment.arrivals" {
				s.facts.arrivals = int64(n)
			}
			if n > maxString && !bulkStrings[where] {
				return fieldf("%s is a string of %s bytes, more than the %s a document field holds", Printable(where), words.Commas(n), words.Commas(maxString))
			}
		}
		return nil
	}
	// a number, true, false or null: read up to the byte that ends it
	watch := watchedNumbers[s.pattern()]
	s.num = append(s.num[:0], c)
	for {
		c, err := s.br.ReadByte()
		if err == nil && (c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '.' || c == '-' || c == '+' || c == 'E') {
			if watch != nil && len(s.num) < 64 {
				s.num = append(s.num, c)
			}
			continue
		}
		if watch != nil {
			if v, perr := strconv.ParseFloat(string(s.num), 64); perr == nil {
				watch(&s.facts, v)
			}
		}
		if err != nil {
			return nil // the end of the input; skipSpace sees it
		}
		return s.br.UnreadByte()
	}
}

// parent names the container whose member is read: the path without
// its last step.
func (s *shapeScanner) parent() string {
	last := s.path[len(s.path)-1]
	s.path = s.path[:len(s.path)-1]
	where := s.in()
	s.path = append(s.path, last)
	return where
}

func (s *shapeScanner) object() error {
	if len(s.path) >= maxDepth {
		return fieldf("%s nests more than %d levels deep; no document does", Printable(s.where()), maxDepth)
	}
	limit := maxMembers
	if c, ok := objectCaps[s.pattern()]; ok {
		limit = c
	}
	keys := map[string]struct{}{}
	s.path = append(s.path, pathStep{})
	defer func() { s.path = s.path[:len(s.path)-1] }()
	top := len(s.path) - 1
	for n := 0; ; n++ {
		c, err := s.skipSpace()
		if err != nil {
			return errSyntax
		}
		if c == '}' && n == 0 {
			return nil
		}
		if c != '"' {
			return errSyntax
		}
		if n >= limit {
			return fieldf("an object %s has more than %s keys; no document has that many", s.parent(), words.Commas(limit))
		}
		s.key = s.key[:0]
		if _, err := s.str(&s.key); err != nil {
			return err
		}
		key, err := unquoteKey(s.key)
		if err != nil {
			return errSyntax
		}
		folded := foldKey(key)
		if _, dup := keys[folded]; dup {
			return fieldf("key %s appears twice %s; a document has each key once", Printable(strconv.Quote(key)), s.parent())
		}
		keys[folded] = struct{}{}
		s.path[top].key = key
		if c, err = s.skipSpace(); err != nil || c != ':' {
			return errSyntax
		}
		if c, err = s.skipSpace(); err != nil {
			return errSyntax
		}
		if err := s.value(c); err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return errSyntax
		}
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return errSyntax
		}
	}
}

func (s *shapeScanner) array() error {
	if len(s.path) >= maxDepth {
		return fieldf("%s nests more than %d levels deep; no document does", Printable(s.where()), maxDepth)
	}
	where := s.where()
	limit := maxArray
	if c, ok := arrayCaps[where]; ok {
		limit = c
	}
	s.path = append(s.path, pathStep{array: true})
	defer func() { s.path = s.path[:len(s.path)-1] }()
	top := len(s.path) - 1
	for n := 0; ; n++ {
		c, err := s.skipSpace()
		if err != nil {
			return errSyntax
		}
		if c == ']' && n == 0 {
			return nil
		}
		if n >= limit {
			if where == "" {
				where = "the document"
			}
			return fieldf("%s has more than %s elements; no document has that many", Printable(where), words.Commas(limit))
		}
		s.path[top].index = n
		if err := s.value(c); err != nil {
			return err
		}
		if c, err = s.skipSpace(); err != nil {
			return errSyntax
		}
		switch c {
		case ',':
		case ']':
			switch where {
			case "timeline":
				s.facts.timeline = n + 1
			case "expect.expected_per_second":
				s.facts.perSecond = n + 1
			case "observations":
				s.facts.observations = n + 1
			}
			return nil
		default:
			return errSyntax
		}
	}
}

// str reads a string whose opening quote was read and returns its length
// in bytes as written; into, when not nil, gets the raw bytes of a key (at
// most maxKey of them).
func (s *shapeScanner) str(into *[]byte) (int, error) {
	n := 0
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, errSyntax
		}
		if c == '"' {
			return n, nil
		}
		n++
		if into != nil {
			if n > maxKey {
				return 0, fieldf("a key %s is longer than %s bytes; no document has such a key", s.parent(), words.Commas(maxKey))
			}
			*into = append(*into, c)
		}
		if c == '\\' {
			e, err := s.br.ReadByte()
			if err != nil {
				return 0, errSyntax
			}
			n++
			if into != nil {
				*into = append(*into, e)
			}
		}
	}
}

// unquoteKey decodes the escapes of a key as encoding/json does.
func unquoteKey(raw []byte) (string, error) {
	for _, c := range raw {
		if c == '\\' {
			var k string
			err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k)
			return k, err
		}
	}
	return string(raw), nil
}

// checkDuplicateKeys runs the pass on data, which json.Valid passed.
func checkDuplicateKeys(data []byte) error {
	err := scanShape(bytes.NewReader(data))
	if errors.Is(err, errSyntax) {
		return fmt.Errorf("%w: not JSON", ErrDocument)
	}
	return err
}
