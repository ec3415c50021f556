package load

import (
	"strings"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestProgress(t *testing.T) {
	var w redistest.Buffer
	live := &Live{}
	live.Sent.Store(12)
	live.OK.Store(10)
	live.Limited.Store(2)
	live.Dropped.Store(3)
	live.ActiveVUs.Store(4)
	stop := Progress(&w, live, 2*time.Second)
	time.Sleep(450 * time.Millisecond)
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("stop did not return")
	}
	out := w.String()
	for _, want := range []string{"sent 12", "2xx 10", "429 2", "drop 3", "vus 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q: %q", want, out)
		}
	}
}
