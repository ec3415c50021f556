package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/probe"
	"github.com/ratelimit-dev/ratelimit/schematest"
)

// TestProbeFingerprint: probe --fingerprint names serve's token bucket
// (exit 0), writes a fingerprint document that fits its schema, and is
// exit 1 against a target no model fits (no limiter at all); --skip has
// no meaning with it (exit 2).
func TestProbeFingerprint(t *testing.T) {
	t.Parallel()
	tf := newTestFactory(t)
	out := filepath.Join(t.TempDir(), "fp.json")
	if code := tf.execute(t, "probe", probeTarget(t, ""), "--fingerprint", "--out", out); code != exitcode.OK {
		t.Fatalf("probe --fingerprint of serve = %d\n%s%s", code, tf.Out.String(), tf.ErrOut.String())
	}
	if !strings.Contains(tf.Out.String(), "verdict: PASS") || !strings.Contains(tf.Out.String(), "token-bucket:burst=10,rate=5/s") {
		t.Errorf("text does not name the token bucket:\n%s", tf.Out.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, "probe --fingerprint --out", data)
	var res probe.Fingerprint
	if err := json.Unmarshal(data, &res); err != nil || res.Kind != probe.FingerprintKind || len(res.Fits) == 0 || len(res.Observations) != res.Requests {
		t.Fatalf("document: %v, kind %q, %d fits, %d observations of %d requests", err, res.Kind, len(res.Fits), len(res.Observations), res.Requests)
	}

	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(open.Close)
	tf = newTestFactory(t)
	if code := tf.execute(t, "probe", open.URL, "--fingerprint", "--budget", "200", "-o", "junit"); code != exitcode.Failed {
		t.Errorf("probe --fingerprint of a target without a limiter = %d, want 1\n%s", code, tf.ErrOut.String())
	}
	if !strings.Contains(tf.Out.String(), "<failure") {
		t.Errorf("junit has no failure:\n%s", tf.Out.String())
	}
	tf = newTestFactory(t)
	if code := tf.execute(t, "probe", open.URL, "--fingerprint", "--skip", "reset"); code != exitcode.Usage {
		t.Errorf("--fingerprint --skip = %d, want 2", code)
	}
}
