package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestEvalPer(t *testing.T) {
	for _, tt := range []struct {
		d         time.Duration
		per, span string
	}{
		{time.Second, "per second", "1s"},
		{time.Minute, "per minute", "1m"},
		{time.Hour, "per hour", "1h"},
		{24 * time.Hour, "per day", "24h"},
		{10 * time.Second, "per 10s", "10s"},
		{90 * time.Second, "per 1m30s", "1m30s"},
		{2 * time.Minute, "per 2m", "2m"},
		{90 * time.Minute, "per 1h30m", "1h30m"},
		{250 * time.Millisecond, "per 250ms", "250ms"},
	} {
		if got := evalPer(tt.d); got != tt.per {
			t.Errorf("evalPer(%v) = %q, want %q", tt.d, got, tt.per)
		}
		if got := evalSpan(tt.d); got != tt.span {
			t.Errorf("evalSpan(%v) = %q, want %q", tt.d, got, tt.span)
		}
	}
}

// TestEvalJUnitMixedShape: replies of two shapes fail the reply-shape
// testcase, naming the calls; the TTL testcase is separate.
func TestEvalJUnitMixedShape(t *testing.T) {
	res := rawScriptResult()
	res.OtherShape = []int{2}
	var b bytes.Buffer
	if err := Render(&b, "junit", res, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, `failures="1"`) || !strings.Contains(out, `type="reply-shape"`) || !strings.Contains(out, "(call 2)") {
		t.Errorf("junit of mixed replies:\n%s", out)
	}
	b.Reset()
	if err := Render(&b, "text", res, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "reply-shape  FAIL") || !strings.Contains(b.String(), "verdict: FAIL") {
		t.Errorf("text of mixed replies:\n%s", b.String())
	}
}
