package limtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NginxRoundRobin starts Debian's nginx as a reverse proxy on a free
// loopback port that sends each request to the next of backends
// (host:port, on loopback) in turn: replicas behind one address, each
// with state of its own. It returns the base URL; request headers (the
// identity) pass through unchanged.
func NginxRoundRobin(t testing.TB, backends []string) string {
	t.Helper()
	bin, err := lookBinary("/usr/sbin/nginx", "nginx")
	if err != nil {
		need(t, "nginx not found (Debian: apt-get install nginx): %v", err)
	}
	if len(backends) == 0 {
		t.Fatalf("limtest.NginxRoundRobin: no backends")
	}
	var servers strings.Builder
	for _, b := range backends {
		if !strings.HasPrefix(b, "127.0.0.1:") {
			t.Fatalf("limtest.NginxRoundRobin: backend %q is not on loopback", b)
		}
		fmt.Fprintf(&servers, "        server %s;\n", b)
	}
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		prefix := t.TempDir()
		for _, d := range []string{"tmp", "logs"} {
			if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
				t.Fatalf("nginx prefix: %v", err)
			}
		}
		tmp := filepath.Join(prefix, "tmp")
		conf := fmt.Sprintf(`# written by limtest: round robin over replicas, one process
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    keepalive_requests 100000;
    upstream replicas {
%[3]s    }
    server {
        listen 127.0.0.1:%[4]d;
        location / {
            proxy_pass http://replicas;
            proxy_next_upstream off;
        }
    }
}
`, prefix, tmp, servers.String(), port)
		confPath := filepath.Join(prefix, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			t.Fatalf("nginx config: %v", err)
		}
		cmd := exec.Command(bin, "-p", prefix+"/", "-c", confPath, "-e", filepath.Join(prefix, "logs", "error.log"), "-g", "daemon off;")
		p := start(t, "nginx", cmd)
		err := p.waitDial(port, StartTimeout)
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
