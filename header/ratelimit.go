// Package header parses and writes the HTTP header fields a rate limiter
// speaks: RateLimit-Policy and RateLimit from draft-ietf-httpapi-ratelimit-headers
// (Structured Fields, RFC 9651, via github.com/dunglas/httpsfv), Retry-After
// (RFC 9110 section 10.2.3), the cacheability of a 429 (RFC 6585 section 4,
// RFC 9111) and the legacy X-RateLimit-* / RateLimit-Limit family.
//
// The same package is used by `ratelimit serve` to write the fields and by
// `ratelimit load` to check them, so what one writes the other can read.
package header

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Canonical field names.
const (
	NamePolicy     = "RateLimit-Policy"
	NameRateLimit  = "RateLimit"
	NameRetryAfter = "Retry-After"
)

// Canonical map keys of the fields (http.CanonicalHeaderKey), so lookups
// on a hot path do not re-canonicalise the names.
const (
	keyPolicy    = "Ratelimit-Policy"
	keyRateLimit = "Ratelimit"
)

// PolicyLines returns the RateLimit-Policy field lines of h.
func PolicyLines(h http.Header) []string { return h[keyPolicy] }

// LimitLines returns the RateLimit field lines of h.
func LimitLines(h http.Header) []string { return h[keyRateLimit] }

// Quota units registered by the draft (section 3.1.2). Any other String is
// accepted when parsing, as the registry may grow.
const (
	UnitRequests           = "requests"
	UnitContentBytes       = "content-bytes"
	UnitConcurrentRequests = "concurrent-requests"
)

// maxInteger is the largest Integer a Structured Field may carry (RFC 9651
// section 3.3.1: at most 15 digits).
const maxInteger = 999_999_999_999_999

// The drafts of draft-ietf-httpapi-ratelimit-headers whose syntax the
// parsers read. Libraries in use send all of them (express-rate-limit's
// standardHeaders: true is draft-06, 'draft-7' is draft-07); a field in an
// older draft's syntax is read the same way and reported by its draft.
const (
	// DraftCurrent (08 onwards): RateLimit-Policy: "name";q=10;w=2 and
	// RateLimit: "name";r=9;t=2, Lists of named Items.
	DraftCurrent = "draft-08+"
	// Draft07: RateLimit: limit=10, remaining=9, reset=2 (a Dictionary)
	// and RateLimit-Policy: 10;w=2 (Integer Items).
	Draft07 = "draft-07"
	// Draft06: RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset (one
	// Integer each) and RateLimit-Policy: 10;w=2.
	Draft06 = "draft-06"
	// DraftPre08Policy is RateLimit-Policy in the Integer syntax drafts
	// 06 and 07 share ("10;w=2, 100;w=60"); the other fields tell which.
	DraftPre08Policy = "draft-06/07"
)

// Policy is one Quota Policy Item of RateLimit-Policy:
// `"default";q=10;w=2` is Policy{Name: "default", Quota: 10, Window: 2}.
// The older drafts' `10;w=2` is Policy{Quota: 10, Window: 2, Draft:
// DraftPre08Policy}.
type Policy struct {
	Name         string // policy identifier (an sf-string); "" in the older syntax
	Quota        int64  // q: quota in quota units, >= 0 (required)
	Window       int64  // w: time window in seconds, > 0; 0 means absent
	QuotaUnit    string // qu: quota unit; "" means absent (default "requests")
	PartitionKey string // pk: partition key bytes (an sf-binary); "" means absent
	Draft        string // "" for the current syntax, else DraftPre08Policy
}

// Limit is one Service Limit Item of RateLimit:
// `"default";r=0;t=1` is Limit{Name: "default", Remaining: 0, Reset: 1}.
// Draft-07's `limit=10, remaining=0, reset=1` is Limit{Quota: 10,
// Remaining: 0, Reset: 1, Draft: Draft07}.
type Limit struct {
	Name         string // policy identifier this limit belongs to
	Remaining    int64  // r: remaining quota units, >= 0 (required)
	Reset        int64  // t: seconds until more quota is available, >= 0; -1 means absent
	PartitionKey string // pk: partition key bytes; "" means absent
	Quota        int64  // draft-07's limit=; 0 when absent (the current draft has none)
	Draft        string // "" for the current syntax, else Draft07
}

// NoReset is the Limit.Reset value for a limit without the t parameter.
const NoReset = -1

// ErrInvalid is wrapped by every validation and parse error of this package.
var ErrInvalid = errors.New("invalid rate limit header")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Validate reports whether p can be written as a Quota Policy Item.
func (p Policy) Validate() error {
	if err := validName(p.Name); err != nil {
		return err
	}
	if p.Quota < 0 || p.Quota > maxInteger {
		return invalidf("policy %q: q=%d must be between 0 and %d", p.Name, p.Quota, int64(maxInteger))
	}
	if p.Window < 0 || p.Window > maxInteger {
		return invalidf("policy %q: w=%d must be a positive number of seconds", p.Name, p.Window)
	}
	if p.QuotaUnit != "" {
		if err := printableASCII(p.QuotaUnit); err != nil {
			return invalidf("policy %q: qu: %v", p.Name, err)
		}
	}
	return nil
}

// Validate reports whether l can be written as a Service Limit Item.
func (l Limit) Validate() error {
	if err := validName(l.Name); err != nil {
		return err
	}
	if l.Remaining < 0 || l.Remaining > maxInteger {
		return invalidf("limit %q: r=%d must be between 0 and %d", l.Name, l.Remaining, int64(maxInteger))
	}
	if l.Reset < NoReset || l.Reset > maxInteger {
		return invalidf("limit %q: t=%d must be a non-negative number of seconds", l.Name, l.Reset)
	}
	return nil
}

func validName(name string) error {
	if err := printableASCII(name); err != nil {
		return invalidf("policy name %q: %v", name, err)
	}
	return nil
}

func printableASCII(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return fmt.Errorf("byte %#x at %d is not printable ASCII", s[i], i)
		}
	}
	return nil
}

func (p Policy) item() httpsfv.Item {
	it := httpsfv.NewItem(p.Name)
	it.Params.Add("q", p.Quota)
	if p.QuotaUnit != "" {
		it.Params.Add("qu", p.QuotaUnit)
	}
	if p.Window > 0 {
		it.Params.Add("w", p.Window)
	}
	if p.PartitionKey != "" {
		it.Params.Add("pk", []byte(p.PartitionKey))
	}
	return it
}

func (l Limit) item() httpsfv.Item {
	it := httpsfv.NewItem(l.Name)
	it.Params.Add("r", l.Remaining)
	if l.Reset != NoReset {
		it.Params.Add("t", l.Reset)
	}
	if l.PartitionKey != "" {
		it.Params.Add("pk", []byte(l.PartitionKey))
	}
	return it
}

// FormatPolicies writes the value of a RateLimit-Policy field, parameters in
// the draft's order (q, qu, w, pk): `"default";q=10;w=2`.
func FormatPolicies(ps ...Policy) (string, error) {
	if len(ps) == 0 {
		return "", invalidf("RateLimit-Policy needs at least one policy")
	}
	l := make(httpsfv.List, 0, len(ps))
	for _, p := range ps {
		if err := p.Validate(); err != nil {
			return "", err
		}
		l = append(l, p.item())
	}
	return marshal(l)
}

// FormatLimits writes the value of a RateLimit field: `"default";r=0;t=1`.
func FormatLimits(ls ...Limit) (string, error) {
	if len(ls) == 0 {
		return "", invalidf("RateLimit needs at least one limit")
	}
	l := make(httpsfv.List, 0, len(ls))
	for _, x := range ls {
		if err := x.Validate(); err != nil {
			return "", err
		}
		l = append(l, x.item())
	}
	return marshal(l)
}

func marshal(l httpsfv.List) (string, error) {
	s, err := httpsfv.Marshal(l)
	if err != nil {
		return "", invalidf("serialise structured field: %v", err)
	}
	return s, nil
}

// String is the field value of p alone, or a description of why p is
// invalid ("invalid policy: ...") so that it never panics.
func (p Policy) String() string {
	s, err := FormatPolicies(p)
	if err != nil {
		return "invalid policy: " + err.Error()
	}
	return s
}

// String is the field value of l alone, or a description of why l is invalid.
func (l Limit) String() string {
	s, err := FormatLimits(l)
	if err != nil {
		return "invalid limit: " + err.Error()
	}
	return s
}

// Set writes RateLimit-Policy and RateLimit on h, replacing earlier values.
// Either slice may be empty to leave that field alone.
func Set(h http.Header, ps []Policy, ls []Limit) error {
	if len(ps) > 0 {
		v, err := FormatPolicies(ps...)
		if err != nil {
			return err
		}
		h.Set(NamePolicy, v)
	}
	if len(ls) > 0 {
		v, err := FormatLimits(ls...)
		if err != nil {
			return err
		}
		h.Set(NameRateLimit, v)
	}
	return nil
}

// ParsePolicies parses the RateLimit-Policy field lines (h.Values(NamePolicy);
// a list may be split over several lines) into policies. It fails on syntax
// that is not a Structured Field List, on a member that is not a String (or,
// leniently, a Token: draft revisions disagree) or has a missing q, and on
// parameters of the wrong type or range (q >= 0, w > 0, qu a String, pk a
// Byte Sequence). Unknown parameters are comments and are ignored. A member
// that is an Integer is the drafts 06 and 07's syntax, `10;w=2`: the
// quota is the Integer (Draft DraftPre08Policy).
func ParsePolicies(lines []string) ([]Policy, error) {
	items, err := parseList(NamePolicy, lines)
	if err != nil {
		return nil, err
	}
	out := make([]Policy, 0, len(items))
	for i, it := range items {
		p := Policy{}
		if n, isInt := it.Value.(int64); isInt {
			if n < 0 {
				return nil, invalidf("%s member %d: the quota %d must not be negative", NamePolicy, i, n)
			}
			w, ok, err := intParam(it, "w")
			switch {
			case err != nil:
				return nil, invalidf("%s member %d: %v", NamePolicy, i, err)
			case ok && w <= 0:
				return nil, invalidf("%s member %d: w=%d must be a positive number of seconds", NamePolicy, i, w)
			}
			out = append(out, Policy{Quota: n, Window: w, Draft: DraftPre08Policy})
			continue
		}
		if p.Name, err = itemName(NamePolicy, i, it); err != nil {
			return nil, err
		}
		q, ok, err := intParam(it, "q")
		switch {
		case err != nil:
			return nil, invalidf("%s %q: %v", NamePolicy, p.Name, err)
		case !ok:
			return nil, invalidf("%s %q: missing required q parameter", NamePolicy, p.Name)
		case q < 0:
			return nil, invalidf("%s %q: q=%d must not be negative", NamePolicy, p.Name, q)
		}
		p.Quota = q
		w, ok, err := intParam(it, "w")
		switch {
		case err != nil:
			return nil, invalidf("%s %q: %v", NamePolicy, p.Name, err)
		case ok && w <= 0:
			return nil, invalidf("%s %q: w=%d must be a positive number of seconds", NamePolicy, p.Name, w)
		}
		p.Window = w
		if v, ok := it.Params.Get("qu"); ok {
			s, isStr := v.(string)
			if !isStr {
				return nil, invalidf("%s %q: qu must be a String, got %s", NamePolicy, p.Name, typeName(v))
			}
			if s == "" {
				return nil, invalidf("%s %q: qu must not be empty", NamePolicy, p.Name)
			}
			p.QuotaUnit = s
		}
		if p.PartitionKey, err = pkParam(it); err != nil {
			return nil, invalidf("%s %q: %v", NamePolicy, p.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseLimits parses the RateLimit field lines into service limits. It fails
// on syntax that is not a Structured Field List, on a missing r, on r or t
// that is not a non-negative Integer and on pk that is not a Byte Sequence.
// A Dictionary with limit, remaining and reset is draft-07's syntax: one
// Limit with Draft Draft07.
func ParseLimits(lines []string) ([]Limit, error) {
	if len(lines) == 1 {
		if l, ok := parseLimitLine(lines[0]); ok {
			return []Limit{l}, nil
		}
	}
	return parseLimits(lines)
}

// parseLimits is ParseLimits through the Structured Fields parser, which
// validates every line (parseLimitLine reads the common one faster).
func parseLimits(lines []string) ([]Limit, error) {
	if l, ok, err := parseDraft07(lines); ok {
		if err != nil {
			return nil, err
		}
		return []Limit{l}, nil
	}
	items, err := parseList(NameRateLimit, lines)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, 0, len(items))
	for i, it := range items {
		l := Limit{Reset: NoReset}
		if l.Name, err = itemName(NameRateLimit, i, it); err != nil {
			return nil, err
		}
		r, ok, err := intParam(it, "r")
		switch {
		case err != nil:
			return nil, invalidf("%s %q: %v", NameRateLimit, l.Name, err)
		case !ok:
			return nil, invalidf("%s %q: missing required r parameter", NameRateLimit, l.Name)
		case r < 0:
			return nil, invalidf("%s %q: r=%d must not be negative", NameRateLimit, l.Name, r)
		}
		l.Remaining = r
		t, ok, err := intParam(it, "t")
		switch {
		case err != nil:
			return nil, invalidf("%s %q: %v", NameRateLimit, l.Name, err)
		case ok && t < 0:
			return nil, invalidf("%s %q: t=%d must not be negative", NameRateLimit, l.Name, t)
		case ok:
			l.Reset = t
		}
		if l.PartitionKey, err = pkParam(it); err != nil {
			return nil, invalidf("%s %q: %v", NameRateLimit, l.Name, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// parseDraft07 reads draft-07's RateLimit, a Dictionary of Integers
// `limit=10, remaining=9, reset=2`; ok is false when the field is not a
// Dictionary holding remaining (then it is the current draft's List).
func parseDraft07(lines []string) (Limit, bool, error) {
	joined := strings.Join(lines, ",")
	if !strings.Contains(joined, "remaining=") {
		return Limit{}, false, nil
	}
	d, err := httpsfv.UnmarshalDictionary(lines)
	if err != nil {
		return Limit{}, false, nil
	}
	l := Limit{Reset: NoReset, Draft: Draft07}
	get := func(key string) (int64, bool, error) {
		m, ok := d.Get(key)
		if !ok {
			return 0, false, nil
		}
		it, isItem := m.(httpsfv.Item)
		n, isInt := it.Value.(int64)
		if !isItem || !isInt || n < 0 {
			return 0, true, invalidf("%s (draft-07 syntax): %s must be a non-negative Integer", NameRateLimit, key)
		}
		return n, true, nil
	}
	r, ok, err := get("remaining")
	if !ok {
		return Limit{}, false, nil
	}
	if err != nil {
		return Limit{}, true, err
	}
	l.Remaining = r
	if q, ok, err := get("limit"); err != nil {
		return Limit{}, true, err
	} else if ok {
		l.Quota = q
	}
	if t, ok, err := get("reset"); err != nil {
		return Limit{}, true, err
	} else if ok {
		l.Reset = t
	}
	return l, true, nil
}

// CheckConsistent cross-checks the two fields of one response: every limit
// whose name matches a policy must have r <= q, and a draft-07 limit's r
// its own limit= and the first policy's quota.
func CheckConsistent(ps []Policy, ls []Limit) error {
	for _, l := range ls {
		if l.Draft == Draft07 {
			if l.Quota > 0 && l.Remaining > l.Quota {
				return invalidf("%s: remaining=%d exceeds limit=%d", NameRateLimit, l.Remaining, l.Quota)
			}
			if len(ps) > 0 && ps[0].Draft != "" && l.Remaining > ps[0].Quota {
				return invalidf("%s: remaining=%d exceeds the policy's quota %d", NameRateLimit, l.Remaining, ps[0].Quota)
			}
			continue
		}
		for _, p := range ps {
			if p.Name == l.Name && p.Draft == "" && l.Remaining > p.Quota {
				return invalidf("%s %q: r=%d exceeds the policy's q=%d", NameRateLimit, l.Name, l.Remaining, p.Quota)
			}
		}
	}
	return nil
}

func parseList(field string, lines []string) ([]httpsfv.Item, error) {
	if len(lines) == 0 || strings.TrimSpace(strings.Join(lines, "")) == "" {
		return nil, invalidf("%s is empty", field)
	}
	list, err := httpsfv.UnmarshalList(lines)
	if err != nil {
		return nil, invalidf("%s is not a Structured Field List: %v", field, err)
	}
	if len(list) == 0 {
		return nil, invalidf("%s is empty", field)
	}
	items := make([]httpsfv.Item, 0, len(list))
	for i, m := range list {
		it, ok := m.(httpsfv.Item)
		if !ok {
			return nil, invalidf("%s member %d is an inner list, want an Item", field, i)
		}
		items = append(items, it)
	}
	return items, nil
}

func itemName(field string, i int, it httpsfv.Item) (string, error) {
	switch v := it.Value.(type) {
	case string:
		return v, nil
	case httpsfv.Token:
		return string(v), nil
	default:
		return "", invalidf("%s member %d: the policy identifier must be a String, got %s", field, i, typeName(v))
	}
}

func intParam(it httpsfv.Item, name string) (int64, bool, error) {
	v, ok := it.Params.Get(name)
	if !ok {
		return 0, false, nil
	}
	n, isInt := v.(int64)
	if !isInt {
		return 0, true, fmt.Errorf("%s must be an Integer, got %s", name, typeName(v))
	}
	return n, true, nil
}

func pkParam(it httpsfv.Item) (string, error) {
	v, ok := it.Params.Get("pk")
	if !ok {
		return "", nil
	}
	b, isBytes := v.([]byte)
	if !isBytes {
		return "", fmt.Errorf("pk must be a Byte Sequence, got %s", typeName(v))
	}
	return string(b), nil
}

func typeName(v any) string {
	switch v.(type) {
	case int64:
		return "an Integer"
	case float64:
		return "a Decimal"
	case string:
		return "a String"
	case httpsfv.Token:
		return "a Token"
	case []byte:
		return "a Byte Sequence"
	case bool:
		return "a Boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
