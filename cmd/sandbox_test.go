package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestSandboxClusterForDuration(t *testing.T) {
	redistest.Require(t)
	tf := newTestFactory(t)
	out := &redistest.Buffer{}
	tf.IO.Out = out
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), tf.Factory, []string{"sandbox", "--cluster", "--for", "3s", "-o", "json"})
	}()
	var doc sandboxDoc
	deadline := time.Now().Add(20 * time.Second)
	for json.Unmarshal([]byte(out.String()), &doc) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("no sandbox document within 20s; stdout %q", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if doc.Kind != "sandbox" || !doc.Cluster || len(doc.Addrs) != 3 || !strings.HasPrefix(doc.URL, "redis://127.0.0.1:") {
		t.Fatalf("sandbox document = %+v, want a 3-node loopback cluster", doc)
	}
	opt, err := redis.ParseURL(doc.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	info, err := c.ClusterInfo(context.Background()).Result()
	c.Close()
	if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO on %s = %q, %v", doc.URL, info, err)
	}
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Fatalf("sandbox exit = %d, stderr %q", code, tf.ErrOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sandbox --for 3s did not return")
	}
	if _, err := os.Stat(doc.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s still exists (%v)", doc.Dir, err)
	}
	for _, a := range doc.Addrs {
		if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("a server still listens on %s after sandbox returned", a)
		}
	}
}
