package judge

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Allowed reports whether a response admitted its request: any 2xx or
// 3xx. It is the one definition of "allowed" in the tool.
func Allowed(status int) bool { return status >= 200 && status < 400 }

// A Rule says which statuses are the limiter's refusals: 429 always, and
// any other the user declared (--limited-status 503 for nginx's default).
// The zero Rule knows 429 only.
type Rule struct {
	also []int // declared refusal statuses besides 429, sorted
}

// NewRule returns the rule with the declared refusal statuses (429 need
// not be listed). A status that is not 4xx or 5xx is bad input, for load,
// report --from and probe alike.
func NewRule(limited []int) (Rule, error) {
	var r Rule
	for _, s := range limited {
		switch {
		case s < 400 || s > 599:
			return Rule{}, fmt.Errorf("%d: a refusal is a 4xx or 5xx status", s)
		case s == http.StatusTooManyRequests || slices.Contains(r.also, s):
		default:
			r.also = append(r.also, s)
		}
	}
	slices.Sort(r.also)
	return r, nil
}

// Limited reports whether status is a refusal by the limiter.
func (r Rule) Limited(status int) bool {
	return status == http.StatusTooManyRequests || len(r.also) > 0 && slices.Contains(r.also, status)
}

// Declared lists the refusal statuses besides 429 ("" when none): "503".
func (r Rule) Declared() []int { return slices.Clone(r.also) }

// String lists every refusal status: "429" or "429, 503".
func (r Rule) String() string {
	parts := []string{"429"}
	for _, s := range r.also {
		parts = append(parts, strconv.Itoa(s))
	}
	return strings.Join(parts, ", ")
}

// DeclaredRefusals are the refusal statuses besides 429 a run counts:
// those given (--limited-status), or else the 4xx and 5xx statuses the
// user expects (--expect-status 200,503 says 503 is an answer, not a
// failure: for a limiter such as nginx's default, its refusal).
func DeclaredRefusals(given, expected []int) []int {
	if len(given) > 0 {
		return given
	}
	var out []int
	for _, s := range expected {
		if s >= 400 && s <= 599 && s != http.StatusTooManyRequests {
			out = append(out, s)
		}
	}
	return out
}
