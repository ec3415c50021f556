package redisconn_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
	"github.com/ratelimit-dev/ratelimit/redistest"
	"github.com/ratelimit-dev/ratelimit/sandbox"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestIdentifiesStandaloneAndCluster(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		url       string
		force     *bool
		mode      string
		primaries int
		isCluster bool
	}{
		{"standalone", redistest.StandaloneSandbox(t).URL, nil, "standalone", 0, false},
		{"cluster detected", redistest.ClusterSandbox(t).URL, nil, "cluster", 3, true},
		{"cluster forced off", redistest.ClusterSandbox(t).URL, new(false), "standalone", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redisconn.Open(ctx, redisconn.Options{URL: tt.url, Cluster: tt.force})
			if err != nil {
				t.Fatalf("Open(%s): %v", tt.url, err)
			}
			defer c.Close()
			s := c.Server
			if s.Product != "redis" || s.Version == "" || s.Mode != tt.mode || s.Primaries != tt.primaries || s.Embedded {
				t.Errorf("Server = %+v, want redis, a version, mode %s, %d primaries", s, tt.mode, tt.primaries)
			}
			if c.IsCluster() != tt.isCluster {
				t.Errorf("IsCluster() = %v, want %v", c.IsCluster(), tt.isCluster)
			}
			_, isClusterClient := c.Client.(*redis.ClusterClient)
			if isClusterClient != tt.isCluster {
				t.Errorf("client is %T, want cluster client %v", c.Client, tt.isCluster)
			}
			if err := c.Client.Ping(ctx).Err(); err != nil {
				t.Errorf("PING: %v", err)
			}
			if tt.isCluster && !strings.Contains(s.String(), "cluster with 3 primaries") {
				t.Errorf("String() = %q, want it to say cluster with 3 primaries", s.String())
			}
			pooled := c.NewClient(300)
			defer pooled.Close()
			if err := pooled.Ping(ctx).Err(); err != nil {
				t.Errorf("PING through NewClient: %v", err)
			}
		})
	}
}

func TestForceClusterOnStandalone(t *testing.T) {
	_, err := redisconn.Open(context.Background(), redisconn.Options{URL: redistest.StandaloneSandbox(t).URL, Cluster: new(true)})
	if exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("Open with --cluster=true on a standalone server: %v (code %d), want exit 2", err, exitcode.Code(err))
	}
}

func TestUnreachable(t *testing.T) {
	_, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://app:s3cretpw@127.0.0.1:1/0", Timeout: time.Second})
	if err == nil {
		t.Fatal("Open of 127.0.0.1:1 succeeded")
	}
	if code := exitcode.Code(err); code != exitcode.Unreachable {
		t.Errorf("exit code = %d, want 3 (%v)", code, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") || strings.Contains(msg, "s3cretpw") || strings.Contains(msg, "\n") {
		t.Errorf("error %q must name the address on one line and never show the password", msg)
	}
}

func TestBadURLs(t *testing.T) {
	for _, u := range []string{"http://x:1", "redis://user:hunter2@[::1", "localhost:6379x", "redis://127.0.0.1:1/notadb"} {
		_, err := redisconn.Open(context.Background(), redisconn.Options{URL: u})
		if code := exitcode.Code(err); code != exitcode.Usage {
			t.Errorf("Open(%q) = %v (code %d), want exit 2", u, err, code)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %q shows the password", err)
		}
	}
	_, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://127.0.0.1:1", TLSCA: "/x"})
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("TLS flag with redis:// = %v, want exit 2", err)
	}
}

func TestRedactQueryPassword(t *testing.T) {
	for _, u := range []string{
		"redis://127.0.0.1:1?password=hunter2",
		"redis://127.0.0.1:1/0?dial_timeout=1s&password=hunter2",
		"redis://:hunter2@127.0.0.1:1?sentinel_password=hunter2",
	} {
		if r := redisconn.Redact(u); strings.Contains(r, "hunter2") {
			t.Errorf("Redact(%q) = %q shows the password", u, r)
		}
		_, err := redisconn.Open(context.Background(), redisconn.Options{URL: u, Timeout: 300 * time.Millisecond})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) = %v, want an error without the password", u, err)
		}
	}
}

func TestPasswordNeverShown(t *testing.T) {
	redistest.Require(t)
	sb, err := sandbox.Start(context.Background(), sandbox.Config{Password: "pa55-word"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	host := strings.TrimPrefix(sb.URL, "redis://")
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: "redis://default:pa55-word@" + host + "/0"})
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	defer c.Close()
	if s := c.Server.String(); strings.Contains(s, "pa55-word") || !strings.Contains(s, "xxxxx") {
		t.Errorf("Server.String() = %q, want the password redacted", s)
	}
	_, err = redisconn.Open(context.Background(), redisconn.Options{URL: "redis://default:wrong-pass@" + host + "/0"})
	if err == nil || strings.Contains(err.Error(), "wrong-pass") || exitcode.Code(err) != exitcode.Unreachable {
		t.Errorf("Open with a wrong password = %v, want exit 3 without the password", err)
	}
}

func TestEmbeddedFallback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	var notice bytes.Buffer
	opts := redisconn.WithDefault(redisconn.Options{Notice: &notice}, "redis://"+closed+"/0", 100*time.Millisecond)
	c, err := redisconn.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open with nothing configured: %v", err)
	}
	defer c.Close()
	if !c.Server.Embedded || c.Server.Product != "miniredis" {
		t.Errorf("Server = %+v, want the embedded miniredis", c.Server)
	}
	if n := notice.String(); strings.Count(n, "\n") != 1 || !strings.Contains(n, "embedded") || !strings.Contains(n, "--redis") {
		t.Errorf("notice = %q, want one line naming the embedded server and --redis", n)
	}
	if err := c.Client.Set(context.Background(), "k", "v", time.Second).Err(); err != nil {
		t.Errorf("SET on embedded: %v", err)
	}
}

func TestDefaultFindsLocalServer(t *testing.T) {
	sb := redistest.StandaloneSandbox(t)
	var notice bytes.Buffer
	opts := redisconn.WithDefault(redisconn.Options{Notice: &notice}, sb.URL+"/0", 300*time.Millisecond)
	c, err := redisconn.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := strings.TrimPrefix(sb.URL, "redis://")
	if n := notice.String(); c.Server.Embedded || strings.Count(n, "\n") != 1 || !strings.Contains(n, addr+" answered") || !strings.Contains(n, "--redis") {
		t.Errorf("with a server on the default address got %+v and notice %q, want that server and one line saying %s answered", c.Server, n, addr)
	}
}

func TestExplicitEmbedded(t *testing.T) {
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: "embedded"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Server.Embedded {
		t.Errorf("--redis embedded gave %+v", c.Server)
	}
}

func TestTLS(t *testing.T) {
	redistest.Require(t)
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	sb, err := sandbox.Start(context.Background(), sandbox.Config{TLS: &sandbox.TLS{CertFile: cert, KeyFile: key, CAFile: ca}})
	if err != nil {
		t.Fatalf("start TLS server: %v", err)
	}
	t.Cleanup(func() { _ = sb.Stop() })
	if !strings.HasPrefix(sb.URL, "rediss://") {
		t.Fatalf("sandbox URL = %q, want rediss://", sb.URL)
	}
	c, err := redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL, TLSCA: ca})
	if err != nil {
		t.Fatalf("Open %s with --tls-ca: %v", sb.URL, err)
	}
	defer c.Close()
	if err := c.Client.Ping(context.Background()).Err(); err != nil {
		t.Errorf("PING over TLS: %v", err)
	}
	// Without the CA the certificate is not trusted: unreachable, not a panic.
	_, err = redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL, Timeout: time.Second})
	if exitcode.Code(err) != exitcode.Unreachable {
		t.Errorf("TLS without --tls-ca = %v, want exit 3", err)
	}
	c2, err := redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL, TLSSkipVerify: true})
	if err != nil {
		t.Errorf("--tls-skip-verify: %v", err)
	} else {
		c2.Close()
	}
	// a client certificate and key, read through the bounded reader
	c3, err := redisconn.Open(context.Background(), redisconn.Options{URL: sb.URL, TLSCA: ca, TLSCert: cert, TLSKey: key})
	if err != nil {
		t.Errorf("--tls-cert/--tls-key: %v", err)
	} else {
		c3.Close()
	}
}

// TestTLSFilesBounded (issue 26): --tls-ca /dev/zero grew without bound
// and a FIFO hung: every TLS file is a regular file of at most 1 MiB,
// refused with one exit-2 line otherwise, before any connection.
func TestTLSFilesBounded(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ path, want string }{{"/dev/zero", "not a regular file"}, {fifo, "not a regular file"}, {dir, "not a regular file"}, {big, "ceiling"}} {
		for _, o := range []redisconn.Options{
			{TLSCA: bad.path, TLSCert: cert, TLSKey: key},
			{TLSCA: ca, TLSCert: bad.path, TLSKey: key},
			{TLSCA: ca, TLSCert: cert, TLSKey: bad.path},
		} {
			o.URL, o.Source = "rediss://127.0.0.1:1", "--redis"
			done := make(chan error, 1)
			go func() { done <- redisconn.Check(o) }()
			select {
			case err := <-done:
				if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("Check(ca %s, cert %s, key %s) = %v, want one exit-2 line saying %q", o.TLSCA, o.TLSCert, o.TLSKey, err, bad.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Check(ca %s, cert %s, key %s) did not return", o.TLSCA, o.TLSCert, o.TLSKey)
			}
		}
	}
}

// writeCerts makes a CA and a server certificate for 127.0.0.1 and writes
// them as PEM files.
func writeCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ratelimit test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	ca = filepath.Join(dir, "ca.pem")
	cert = filepath.Join(dir, "server.pem")
	key = filepath.Join(dir, "server-key.pem")
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(ca, "CERTIFICATE", caDER)
	write(cert, "CERTIFICATE", srvDER)
	write(key, "EC PRIVATE KEY", keyDER)
	return ca, cert, key
}
