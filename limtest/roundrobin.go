package limtest

import (
	"fmt"
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
	return startNginx(t, bin, func(prefix string, port int) (string, error) {
		return fmt.Sprintf(`# written by limtest: round robin over replicas, one process
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
`, prefix, filepath.Join(prefix, "tmp"), servers.String(), port), nil
	})
}
