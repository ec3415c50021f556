package words

import (
	"math/big"
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Commas(100000000), "100,000,000"},
		{Commas(int64(-1234)), "-1,234"},
		{Commas(big.NewInt(999)), "999"},
		{Span(90 * time.Second), "1m30s"},
		{Span(time.Hour), "1h"},
		{Span(2 * time.Minute), "2m"},
		{Per(time.Minute), "per minute"},
		{Per(10 * time.Second), "per 10s"},
		{Printable("a\nb"), `a\nb`},
		{Plural(1, "request", "requests"), "request"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
