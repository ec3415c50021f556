package eval

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

func TestParseEvalArgs(t *testing.T) {
	tests := []struct {
		in         string
		keys, args []string
		bad        bool
	}{
		{in: "k , 10 5 1", keys: []string{"k"}, args: []string{"10", "5", "1"}},
		{in: "k1 k2 , a", keys: []string{"k1", "k2"}, args: []string{"a"}},
		{in: "k ,", keys: []string{"k"}, args: []string{}},
		{in: ", a b", keys: []string{}, args: []string{"a", "b"}},
		{in: ",", keys: []string{}, args: []string{}},
		{in: "k , a , b", keys: []string{"k"}, args: []string{"a", ",", "b"}},
		{in: "k", bad: true},
		{in: "k1 k2 10", bad: true},
		{in: "k, 10", bad: true},
		{in: "k ,10", bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			keys, args, err := ParseEvalArgs(strings.Fields(tt.in))
			if tt.bad {
				if exitcode.Code(err) != exitcode.Usage {
					t.Fatalf("ParseEvalArgs(%q) err = %v, want a usage error", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEvalArgs(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(keys, tt.keys) || !reflect.DeepEqual(args, tt.args) {
				t.Errorf("ParseEvalArgs(%q) = %q, %q; want %q, %q", tt.in, keys, args, tt.keys, tt.args)
			}
		})
	}
}

// FuzzParseEvalArgs checks that parsing never panics, that a success
// splits at the first lone comma and loses nothing, and that every failure
// is a one-line usage error.
func FuzzParseEvalArgs(f *testing.F) {
	for _, s := range []string{"k , 1 2", "k", "k,1", ", a", "a , , b", "", "{x} y , z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Split(s, " ")
		keys, args, err := ParseEvalArgs(words)
		first := slices.Index(words, ",")
		if err != nil {
			if first >= 0 {
				t.Fatalf("ParseEvalArgs(%q) failed although it has a lone comma: %v", words, err)
			}
			if exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseEvalArgs(%q) error %q is not a one-line usage error", words, err)
			}
			return
		}
		if first < 0 {
			t.Fatalf("ParseEvalArgs(%q) succeeded without a lone comma", words)
		}
		if len(keys) != first || len(keys)+len(args)+1 != len(words) {
			t.Fatalf("ParseEvalArgs(%q) = %q, %q: wrong split", words, keys, args)
		}
		if slices.Contains(keys, ",") {
			t.Fatalf("ParseEvalArgs(%q) keys %q contain the separator", words, keys)
		}
		rebuilt := append(append(append([]string{}, keys...), ","), args...)
		if !slices.Equal(rebuilt, words) {
			t.Fatalf("ParseEvalArgs(%q) = %q , %q does not rebuild the input", words, keys, args)
		}
	})
}

// FuzzExpandArgs: any argument template expands without panicking, and
// the placeholders are gone from the result.
func FuzzExpandArgs(f *testing.F) {
	for _, s := range []string{"req-{uuid}", "{now_ms}", "{n}{n}", "{user42}", "{", "}{uuid", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		out := expandArgs([]string{w}, 7, func() string { return "ID" }, func() time.Time { return time.UnixMilli(5) })
		got := out[0].(string)
		if hasPlaceholder(got) {
			t.Errorf("expandArgs(%q) = %q still holds a placeholder", w, got)
		}
		if !hasPlaceholder(w) && got != w {
			t.Errorf("expandArgs(%q) = %q, want it unchanged", w, got)
		}
	})
}
