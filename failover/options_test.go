package failover

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/fault"
	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/rate"
	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestValidate(t *testing.T) {
	ok := Options{URL: "redis://127.0.0.1:7001"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(defaults) = %v", err)
	}
	neg := int64(-1)
	for _, tt := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"remote", func(o *Options) { o.URL = "redis://redis.invalid:6380" }, fault.AllowRemoteFlag},
		{"no url", func(o *Options) { o.URL = "" }, "needs the URL of a cluster"},
		{"embedded", func(o *Options) { o.URL = "embedded" }, "not the embedded server"},
		{"bad url", func(o *Options) { o.URL = "redis://:pw@" }, "names no host"},
		{"params", func(o *Options) {
			o.Params = limiter.Params{Algo: limiter.TokenBucket, Capacity: 0, Rate: rate.MustParse("1/s")}
		}, "capacity"},
		{"rate", func(o *Options) { o.Rate = rate.MustParse("20000/s") }, "--rate"},
		{"clients", func(o *Options) { o.Clients = 65 }, "--clients 65"},
		{"trials", func(o *Options) { o.Trials = -1 }, "--trials -1"},
		{"before", func(o *Options) { o.Before = time.Millisecond }, "--before 1ms"},
		{"after", func(o *Options) { o.After = 2 * time.Minute }, "--after 2m0s"},
		{"wait", func(o *Options) { o.Wait = 6 }, "--wait 6"},
		{"wait timeout", func(o *Options) { o.WaitTimeout = 1500 * time.Microsecond }, "--wait-timeout"},
		{"max extra", func(o *Options) { o.MaxExtra = &neg }, "--max-extra -1"},
		{"mode", func(o *Options) { o.Mode = "sideways" }, "unknown failover mode"},
		{"graceful", func(o *Options) { o.Mode = fault.FailoverGraceful }, "nothing to measure"},
		{"run id", func(o *Options) { o.RunID = "a}b" }, "run id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			err := o.Validate()
			if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v (exit %d), want exit 2 containing %q", err, exitcode.Code(err), tt.want)
			}
		})
	}
}

type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) Dial(_ context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = append(d.addrs, addr)
	return nil, errors.New("test dialer: no connection made")
}

// TestRunRefusesBeforeAnyTraffic: a standalone client, a remote fault
// target and bad options are exit 2 with nothing dialled.
func TestRunRefusesBeforeAnyTraffic(t *testing.T) {
	d := &recordingDialer{}
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Dialer: d.Dial})
	defer single.Close()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, Dialer: d.Dial})
	defer cluster.Close()
	for _, tt := range []struct {
		name   string
		client redis.UniversalClient
		opts   Options
		want   string
	}{
		{"standalone", single, Options{URL: "redis://127.0.0.1:1"}, "needs a Redis Cluster with replicas"},
		{"remote", cluster, Options{URL: "redis://redis.invalid:6380"}, fault.AllowRemoteFlag},
		{"bad trials", cluster, Options{URL: "redis://127.0.0.1:1", Trials: 1000}, "--trials 1000"},
	} {
		_, err := Run(context.Background(), tt.client, tt.opts)
		if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Run error = %v (exit %d), want exit 2 containing %q", tt.name, err, exitcode.Code(err), tt.want)
		}
	}
	if len(d.addrs) != 0 {
		t.Errorf("dialled %v before refusing", d.addrs)
	}
}

// TestRunNeedsReplicas: on the harness's cluster without replicas the run
// is exit 2 before any fault.
func TestRunNeedsReplicas(t *testing.T) {
	tg := redistest.Cluster(t)
	_, err := Run(context.Background(), tg.Client, Options{URL: tg.URL, Trials: 1, RunID: "no-replicas-" + strings.ReplaceAll(t.Name(), "/", "-")})
	if err == nil || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "has no replica") {
		t.Errorf("Run error = %v (exit %d), want exit 2 saying the primary has no replica", err, exitcode.Code(err))
	}
}
