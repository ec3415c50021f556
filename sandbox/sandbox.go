// Package sandbox starts disposable redis-server (or valkey-server)
// processes on free loopback ports: one standalone server or a local
// cluster. Data lives in a temporary directory, persistence is off, and
// Stop ends exactly the processes it started and removes the directory.
// The CLI's `ratelimit sandbox` and the test harness (package redistest)
// both use it.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrConfig marks a configuration the sandbox cannot start: bad counts or
// ports, a missing binary, or a server that exits at start (a taken port,
// an unknown --server-arg).
var ErrConfig = errors.New("sandbox configuration")

var errExitedAtStart = fmt.Errorf("exited at start: %w", ErrConfig)

// configErr marks a configuration problem.
func configErr(format string, args ...any) error {
	return fmt.Errorf(format+" (%w)", append(args, ErrConfig)...)
}

// ErrNoServer means no redis-server or valkey-server binary was found.
var ErrNoServer = errors.New("no redis-server or valkey-server on PATH; install one (Debian: apt-get install redis-server) or pass --server-bin PATH")

// Config says what to start.
type Config struct {
	// Bin is the server binary; empty finds redis-server, then valkey-server, on PATH.
	Bin string
	// Primaries is 0 for one standalone server, else the number of cluster primaries.
	Primaries int
	// Replicas per primary (cluster only).
	Replicas int
	// PortBase makes node i listen on PortBase+i; 0 picks free ports.
	PortBase int
	// TLS, when set, makes every node serve TLS only on its port.
	TLS *TLS
	// Password, when set, is required by every node (requirepass / masterauth).
	Password string
	// Args are extra server arguments, e.g. {"--maxclients", "20000"}.
	Args []string
	// Log receives the servers' own log lines; nil discards them.
	Log io.Writer
	// StartTimeout bounds the wait for every node (and cluster_state:ok); 0 means 20s.
	StartTimeout time.Duration
}

// TLS names PEM files for a TLS-only server.
type TLS struct {
	CertFile, KeyFile, CAFile string
}

// Node is one server process.
type Node struct {
	Addr    string // host:port a client connects to
	Port    int
	BusPort int // cluster bus port; 0 for a standalone server
	Primary bool
	dir     string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// Sandbox is a set of running servers.
type Sandbox struct {
	URL     string   // redis:// or rediss:// URL of the first node
	Addrs   []string // every node's host:port
	Dir     string   // temporary directory holding the nodes' data
	Nodes   []*Node
	Cluster bool
	Product string // "redis" or "valkey", from the binary's name

	stopOnce sync.Once
	stopErr  error
}

// FindBinary returns bin if set, else the first of redis-server and
// valkey-server found on PATH.
func FindBinary(bin string) (string, error) {
	if bin != "" {
		p, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("server binary %s: %w: %w", bin, err, ErrConfig)
		}
		return p, nil
	}
	for _, name := range []string{"redis-server", "valkey-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoServer
}

// Start launches the servers described by cfg and waits until they answer
// (and, for a cluster, until every node reports cluster_state:ok). On error
// everything already started is stopped again.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	quiet()
	// Free ports are found by binding and releasing them, so another
	// process can take one before the server binds it; a server that
	// exits at start is therefore retried on fresh ports.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var sb *Sandbox
		sb, err = start(ctx, cfg)
		if err == nil || cfg.PortBase != 0 || !errors.Is(err, errExitedAtStart) || ctx.Err() != nil {
			return sb, err
		}
	}
	return nil, err
}

func start(ctx context.Context, cfg Config) (_ *Sandbox, err error) {
	bin, err := FindBinary(cfg.Bin)
	if err != nil {
		return nil, err
	}
	if cfg.Primaries < 0 || cfg.Replicas < 0 {
		return nil, configErr("primaries and replicas must not be negative")
	}
	if cfg.Primaries > 0 && cfg.Primaries < 3 {
		return nil, configErr("a cluster needs at least 3 primaries, got %d", cfg.Primaries)
	}
	if cfg.Primaries == 0 && cfg.Replicas > 0 {
		return nil, configErr("--replicas needs --cluster")
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir, err := os.MkdirTemp("", "ratelimit-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("create sandbox dir: %w", err)
	}
	sb := &Sandbox{Dir: dir, Cluster: cfg.Primaries > 0, Product: productOf(bin)}
	defer func() {
		if err != nil {
			_ = sb.Stop()
		}
	}()

	count := 1
	if sb.Cluster {
		count = cfg.Primaries * (1 + cfg.Replicas)
	}
	ports, busPorts, err := pickPorts(count, cfg.PortBase, sb.Cluster)
	if err != nil {
		return nil, err
	}
	for i, port := range ports {
		busPort := 0
		if sb.Cluster {
			busPort = busPorts[i]
		}
		n, err := startNode(bin, dir, i, port, busPort, cfg)
		if err != nil {
			return nil, err
		}
		n.Primary = !sb.Cluster || i < cfg.Primaries
		sb.Nodes = append(sb.Nodes, n)
		sb.Addrs = append(sb.Addrs, n.Addr)
	}
	for _, n := range sb.Nodes {
		if err := waitReady(ctx, n, cfg); err != nil {
			return nil, err
		}
	}
	if sb.Cluster {
		if err := formCluster(ctx, sb, cfg); err != nil {
			return nil, err
		}
	}
	scheme := "redis"
	if cfg.TLS != nil {
		scheme = "rediss"
	}
	sb.URL = scheme + "://" + sb.Nodes[0].Addr
	return sb, nil
}

func productOf(bin string) string {
	if strings.Contains(filepath.Base(bin), "valkey") {
		return "valkey"
	}
	return "redis"
}

// pickPorts returns the client port and, for a cluster, the bus port of
// each of count nodes. With base they are base+i and base+i+10000 (the
// Redis convention); otherwise every port is one the kernel handed out as
// free, all held open together so none repeats, and the bus ports are
// chosen independently (passed with --cluster-port and CLUSTER MEET), so a
// busy machine's ephemeral range does not have to leave port+10000 free.
func pickPorts(count, base int, cluster bool) (ports, bus []int, err error) {
	if base > 0 {
		for i := 0; i < count; i++ {
			p := base + i
			if p > 65535 || (cluster && p+10000 > 65535) {
				return nil, nil, configErr("--port-base %d leaves no room for %d nodes (cluster bus ports are port+10000)", base, count)
			}
			ports = append(ports, p)
			if cluster {
				bus = append(bus, p+10000)
			}
		}
		return ports, bus, nil
	}
	need := count
	if cluster {
		need *= 2
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	var all []int
	for len(all) < need {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("find a free loopback port (%d of %d found): %w", len(all), need, err)
		}
		held = append(held, l)
		all = append(all, l.Addr().(*net.TCPAddr).Port)
	}
	if cluster {
		return all[:count], all[count:], nil
	}
	return all, nil, nil
}

func startNode(bin, dir string, i, port, busPort int, cfg Config) (*Node, error) {
	cluster := busPort > 0
	nodeDir := filepath.Join(dir, "node-"+strconv.Itoa(i))
	if err := os.Mkdir(nodeDir, 0o700); err != nil {
		return nil, fmt.Errorf("create node dir: %w", err)
	}
	args := []string{
		"--bind", "127.0.0.1",
		"--dir", nodeDir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--logfile", "",
		"--loglevel", "warning",
	}
	if cfg.TLS != nil {
		args = append(args,
			"--port", "0",
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", cfg.TLS.CertFile,
			"--tls-key-file", cfg.TLS.KeyFile,
			"--tls-ca-cert-file", cfg.TLS.CAFile,
			"--tls-auth-clients", "no",
		)
		if cluster {
			args = append(args, "--tls-cluster", "yes", "--tls-replication", "yes")
		}
	} else {
		args = append(args, "--port", strconv.Itoa(port))
	}
	if cfg.Password != "" {
		args = append(args, "--requirepass", cfg.Password, "--masterauth", cfg.Password)
	}
	if cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(nodeDir, "nodes.conf"),
			"--cluster-node-timeout", "5000",
			"--cluster-port", strconv.Itoa(busPort),
		)
	}
	args = append(args, cfg.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = nodeDir
	cmd.Stdout = cfg.Log
	cmd.Stderr = cfg.Log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s on port %d: %w", filepath.Base(bin), port, err)
	}
	n := &Node{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, BusPort: busPort, dir: nodeDir, cmd: cmd, done: make(chan struct{})}
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()
	return n, nil
}

// Stop ends every process the sandbox started (SIGTERM, then SIGKILL after
// 5 s) and removes its directory. It is safe to call more than once.
func (s *Sandbox) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		for _, n := range s.Nodes {
			if err := n.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if s.Dir != "" {
			if err := os.RemoveAll(s.Dir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", s.Dir, err))
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// Running reports whether the node's process is still alive.
func (n *Node) Running() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// PID is the node's process id.
func (n *Node) PID() int { return n.cmd.Process.Pid }

func (n *Node) stop() error {
	if !n.Running() {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	_ = n.cmd.Process.Kill()
	select {
	case <-n.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("server on %s did not exit", n.Addr)
	}
}
