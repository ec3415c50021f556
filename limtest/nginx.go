package limtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// NginxLimit configures one limit_req zone in front of a location that
// answers 200 "ok\n" (see docs/limiters.md for the arithmetic).
type NginxLimit struct {
	// Rate is limit_req_zone's rate, e.g. "5r/s" or "30r/m".
	Rate string
	// Burst is limit_req's burst (0: none).
	Burst int
	// NoDelay serves requests within the burst at once (limit_req nodelay).
	NoDelay bool
	// Delay is limit_req's delay=N (two-stage limiting): the first N excess
	// requests go at once, the rest of the burst is delayed. It must not be
	// set with NoDelay; with neither, every excess request is delayed.
	Delay int
	// Key is the zone's key: "$binary_remote_addr" (the default) or a
	// request header such as "$http_x_client_id". nginx does not limit a
	// request whose key is empty (a missing header).
	Key string
	// Status is limit_req_status; 0 leaves nginx's default, 503.
	Status int
}

// Nginx starts Debian's nginx (/usr/sbin/nginx, else nginx on PATH) as a
// single non-daemon process (master_process off) with its own prefix, pid
// file, error log and temp paths in a temporary directory, listening on a
// free loopback port, and returns its base URL. It works as root and not.
func Nginx(t testing.TB, conf NginxLimit) string {
	t.Helper()
	bin, err := lookBinary("/usr/sbin/nginx", "nginx")
	if err != nil {
		need(t, "nginx not found (Debian: apt-get install nginx): %v", err)
	}
	if conf.Rate == "" {
		t.Fatalf("limtest.Nginx: NginxLimit.Rate is required, e.g. \"5r/s\"")
	}
	if conf.NoDelay && conf.Delay > 0 {
		t.Fatalf("limtest.Nginx: NoDelay and Delay=%d exclude each other", conf.Delay)
	}
	return startNginx(t, bin, func(prefix string, port int) (string, error) {
		if err := os.MkdirAll(filepath.Join(prefix, "html"), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(prefix, "html", "ok.txt"), []byte("ok\n"), 0o644); err != nil {
			return "", err
		}
		return nginxConf(prefix, port, conf), nil
	})
}

// startNginx starts bin as one non-daemon process with the configuration
// conf writes for a prefix (a temporary directory with tmp and logs) and
// a free loopback port, retrying another port when the one picked was
// taken meanwhile, and returns the base URL.
func startNginx(t testing.TB, bin string, conf func(prefix string, port int) (string, error)) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		prefix := t.TempDir()
		for _, d := range []string{"tmp", "logs"} {
			if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
				t.Fatalf("nginx prefix: %v", err)
			}
		}
		text, err := conf(prefix, port)
		if err != nil {
			t.Fatalf("nginx prefix: %v", err)
		}
		confPath := filepath.Join(prefix, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(text), 0o644); err != nil {
			t.Fatalf("nginx config: %v", err)
		}
		cmd := exec.Command(bin, "-p", prefix+"/", "-c", confPath, "-e", filepath.Join(prefix, "logs", "error.log"), "-g", "daemon off;")
		p := start(t, "nginx", cmd)
		err = p.waitDial(port, StartTimeout)
		if err == nil {
			return baseURL(port)
		}
		log, _ := os.ReadFile(filepath.Join(prefix, "logs", "error.log"))
		err = fmt.Errorf("%w\nerror.log:\n%s", err, tail(log))
		if portTaken(err) && attempt < 5 {
			continue
		}
		t.Fatalf("start nginx: %v", err)
	}
}

// nginxConf is the whole configuration: nothing is read from /etc/nginx.
func nginxConf(prefix string, port int, c NginxLimit) string {
	key := c.Key
	if key == "" {
		key = "$binary_remote_addr"
	}
	var lr strings.Builder
	lr.WriteString("limit_req zone=limtest")
	if c.Burst > 0 {
		lr.WriteString(" burst=" + strconv.Itoa(c.Burst))
	}
	switch {
	case c.NoDelay:
		lr.WriteString(" nodelay")
	case c.Delay > 0:
		lr.WriteString(" delay=" + strconv.Itoa(c.Delay))
	}
	lr.WriteString(";")
	status := ""
	if c.Status != 0 {
		status = "limit_req_status " + strconv.Itoa(c.Status) + ";"
	}
	tmp := filepath.Join(prefix, "tmp")
	return fmt.Sprintf(`# written by limtest: a single nginx process for one test
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    default_type text/plain;
    keepalive_requests 100000;
    limit_req_zone %[3]s zone=limtest:1m rate=%[4]s;
    %[5]s
    server {
        listen 127.0.0.1:%[6]d;
        root %[1]s/html;
        location / {
            %[7]s
            # try_files runs after the preaccess phase, so limit_req applies
            # ("return" would answer in the rewrite phase, before it)
            try_files /ok.txt =404;
        }
    }
}
`, prefix, tmp, key, c.Rate, status, port, lr.String())
}
