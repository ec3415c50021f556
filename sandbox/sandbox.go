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
	"io/fs"
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
// ports, a refused server argument, a missing binary, or a server that
// exits at start (a taken port, an unknown or invalid --server-arg).
var ErrConfig = errors.New("sandbox configuration")

// ErrTimeout marks a start that did not finish within Config.StartTimeout
// (or the caller's deadline): every node, the slot assignment, CLUSTER
// MEET and the replicas share that one deadline.
var ErrTimeout = errors.New("sandbox start timed out")

// errPortTaken marks a start that failed because a port was taken between
// choosing it and the server binding it; Start retries on fresh ports.
var errPortTaken = errors.New("port taken")

// Ceilings on what one sandbox starts, checked before anything runs.
const (
	MaxPrimaries = 16
	MaxReplicas  = 5 // per primary
	MaxNodes     = 64
	// DefaultStartTimeout bounds a start when Config.StartTimeout is 0.
	DefaultStartTimeout = 20 * time.Second
)

// markedError is an error whose text is msg alone and which matches each
// of marks with errors.Is.
type markedError struct {
	msg   string
	marks []error
	cause error
}

func (e *markedError) Error() string { return e.msg }
func (e *markedError) Unwrap() error { return e.cause }
func (e *markedError) Is(target error) bool {
	for _, m := range e.marks {
		if m == target {
			return true
		}
	}
	return false
}

// configErr returns a one-line configuration error.
func configErr(format string, args ...any) error {
	return &markedError{msg: fmt.Sprintf(format, args...), marks: []error{ErrConfig}}
}

// tempDirHint says what to do about a temporary directory that is not
// one: the servers' data lives there.
const tempDirHint = "set TMPDIR to a writable directory (the servers' data lives there) or unset it"

// tempDirName names the temporary directory as the user set it.
func tempDirName() string {
	if v := os.Getenv("TMPDIR"); v != "" {
		return "TMPDIR " + os.TempDir()
	}
	return "the temporary directory " + os.TempDir()
}

// checkTempDir refuses, as bad input (ErrConfig), a temporary directory
// that is missing or not a directory (TMPDIR pointing nowhere).
func checkTempDir() error {
	st, err := os.Stat(os.TempDir())
	switch {
	case err != nil:
		return &markedError{msg: fmt.Sprintf("%s: %v; %s", tempDirName(), pathErr(err), tempDirHint), marks: []error{ErrConfig}, cause: err}
	case !st.IsDir():
		return configErr("%s is not a directory; %s", tempDirName(), tempDirHint)
	}
	return nil
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ErrNoServer means no redis-server or valkey-server binary was found.
var ErrNoServer = errors.New("no redis-server or valkey-server on PATH; install one (Debian: apt-get install redis-server) or pass --server-bin PATH")

// Config says what to start.
type Config struct {
	// Bin is the server binary; empty finds redis-server, then valkey-server, on PATH.
	Bin string
	// Primaries is 0 for one standalone server, else the number of
	// cluster primaries (3 to MaxPrimaries).
	Primaries int
	// Replicas per primary (cluster only, at most MaxReplicas; all nodes
	// together at most MaxNodes).
	Replicas int
	// PortBase makes node i listen on PortBase+i (1024 or more, and a
	// cluster's bus ports PortBase+i+10000 must fit too); 0 picks free ports.
	PortBase int
	// TLS, when set, makes every node serve TLS only on its port.
	TLS *TLS
	// Password, when set, is required by every node (requirepass / masterauth).
	Password string
	// Args are extra server arguments, e.g. {"--maxclients", "20000"},
	// checked by CheckArgs.
	Args []string
	// Log receives the servers' own log lines; nil discards them.
	Log io.Writer
	// StartTimeout bounds the whole start: every node, the slot
	// assignment, CLUSTER MEET, the replicas and cluster_state:ok, retries
	// on fresh ports included; 0 means DefaultStartTimeout.
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
	bin     string // the binary's base name, for messages
	log     *logTail
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
	cfg      Config // what Start was given, for Restart
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

// nodes is the number of servers cfg starts.
func (cfg Config) nodes() int {
	if cfg.Primaries == 0 {
		return 1
	}
	return cfg.Primaries * (1 + cfg.Replicas)
}

// Validate checks cfg without starting anything: counts within the
// ceilings, ports in range, the timeout, and the server arguments
// (CheckArgs). Start calls it first.
func (cfg Config) Validate() error {
	switch {
	case cfg.Primaries < 0 || cfg.Replicas < 0:
		return configErr("primaries and replicas must not be negative")
	case cfg.Primaries > 0 && cfg.Primaries < 3:
		return configErr("a cluster needs at least 3 primaries, got %d", cfg.Primaries)
	case cfg.Primaries > MaxPrimaries:
		return configErr("--primaries %d is more than the sandbox starts; use at most %d", cfg.Primaries, MaxPrimaries)
	case cfg.Primaries == 0 && cfg.Replicas > 0:
		return configErr("--replicas needs --cluster")
	case cfg.Replicas > MaxReplicas:
		return configErr("--replicas %d is more than the sandbox starts; use at most %d per primary", cfg.Replicas, MaxReplicas)
	case cfg.nodes() > MaxNodes:
		return configErr("%d primaries with %d replicas each make %d nodes; the sandbox starts at most %d", cfg.Primaries, cfg.Replicas, cfg.nodes(), MaxNodes)
	case cfg.StartTimeout < 0:
		return configErr("the start timeout must not be negative, got %s", cfg.StartTimeout)
	}
	if cfg.PortBase != 0 {
		last := 65535 - (cfg.nodes() - 1)
		what := ""
		if cfg.Primaries > 0 {
			last -= 10000
			what = " (cluster bus ports are port+10000)"
		}
		if cfg.PortBase < 1024 || cfg.PortBase > last {
			nodes := "1 node"
			if cfg.nodes() > 1 {
				nodes = strconv.Itoa(cfg.nodes()) + " nodes"
			}
			return configErr("--port-base must be between 1024 and %d for %s%s, got %d", last, nodes, what, cfg.PortBase)
		}
	}
	return CheckArgs(cfg.Args)
}

// Start launches the servers described by cfg and waits until they answer
// (and, for a cluster, until every node reports cluster_state:ok). cfg is
// validated before anything runs; the whole start shares one deadline
// (Config.StartTimeout), and a start past it fails with ErrTimeout. On
// error everything already started is killed and its directory removed.
// Before starting, directories that killed runs left behind are removed
// (see removeStale).
func Start(ctx context.Context, cfg Config) (*Sandbox, error) {
	sb, err := launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// launch is Start; on error it also returns the stopped sandbox of the
// last attempt, if one was made, so tests can see how far it got.
func launch(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := FindBinary(cfg.Bin)
	if err != nil {
		return nil, err
	}
	quiet()
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := checkTempDir(); err != nil {
		return nil, err
	}
	removeStale(os.TempDir())
	// Free ports are found by binding and releasing them, so another
	// process can take one before the server binds it; a start that fails
	// on a taken port is therefore retried on fresh ports, within the
	// same deadline.
	var sb *Sandbox
	for attempt := 0; attempt < 3; attempt++ {
		sb, err = start(ctx, cfg, bin)
		if err == nil {
			return sb, nil
		}
		if cfg.PortBase != 0 || !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(parent.Err(), context.Canceled) {
		return sb, fmt.Errorf("start sandbox: %w", parent.Err())
	}
	if ctx.Err() != nil {
		return sb, &markedError{
			msg:   fmt.Sprintf("sandbox of %d nodes did not start within %s: %v; raise --start-timeout or start fewer nodes", cfg.nodes(), timeout, err),
			marks: []error{ErrTimeout, context.DeadlineExceeded},
			cause: err,
		}
	}
	return sb, err
}

// start makes one attempt. On error it returns the killed sandbox.
func start(ctx context.Context, cfg Config, bin string) (sb *Sandbox, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("started 0 of %d nodes: %w", cfg.nodes(), err)
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		// a temporary directory that cannot be written is bad input
		return nil, &markedError{msg: fmt.Sprintf("create sandbox dir in %s: %v; %s", tempDirName(), pathErr(err), tempDirHint), marks: []error{ErrConfig}, cause: err}
	}
	sb = &Sandbox{Dir: dir, Cluster: cfg.Primaries > 0, Product: productOf(bin), cfg: cfg}
	defer func() {
		if err != nil {
			sb.kill()
		}
	}()
	if err := writePID(filepath.Join(dir, ownerFile), os.Getpid()); err != nil {
		return sb, fmt.Errorf("create sandbox dir: %w", err)
	}

	count := cfg.nodes()
	ports, busPorts, err := pickPorts(count, cfg.PortBase, sb.Cluster)
	if err != nil {
		return sb, err
	}
	for i, port := range ports {
		if err := ctx.Err(); err != nil {
			return sb, fmt.Errorf("started %d of %d nodes: %w", i, count, err)
		}
		busPort := 0
		if sb.Cluster {
			busPort = busPorts[i]
		}
		n, err := startNode(bin, dir, i, port, busPort, cfg)
		if n != nil {
			n.Primary = !sb.Cluster || i < cfg.Primaries
			sb.Nodes = append(sb.Nodes, n)
			sb.Addrs = append(sb.Addrs, n.Addr)
		}
		if err != nil {
			return sb, err
		}
	}
	for _, n := range sb.Nodes {
		if err := waitReady(ctx, n, cfg); err != nil {
			return sb, err
		}
	}
	if sb.Cluster {
		if err := formCluster(ctx, sb, cfg); err != nil {
			return sb, err
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

// startNode starts one server. It returns the node whenever a process
// was started, also together with an error.
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
	tail := &logTail{next: cfg.Log}
	cmd := exec.Command(bin, args...)
	cmd.Dir = nodeDir
	// one writer for both streams, so exec copies them in one goroutine
	cmd.Stdout = tail
	cmd.Stderr = tail
	// a server's child (a BGSAVE fork) may hold the output pipe open
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s on port %d: %w", filepath.Base(bin), port, err)
	}
	n := &Node{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, BusPort: busPort,
		dir: nodeDir, bin: filepath.Base(bin), log: tail, cmd: cmd, done: make(chan struct{}),
	}
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()
	if err := writePID(filepath.Join(nodeDir, serverFile), cmd.Process.Pid); err != nil {
		return n, fmt.Errorf("record server pid: %w", err)
	}
	return n, nil
}

// exitedErr says why n exited at start, in the server's own words.
func (n *Node) exitedErr(password string) error {
	reason := n.log.reason()
	if reason == "" {
		reason = fmt.Sprintf("%v, with no output", n.waitErr)
	}
	if password != "" {
		reason = strings.ReplaceAll(reason, password, "***")
	}
	marks := []error{ErrConfig}
	if n.log.portTaken() {
		marks = append(marks, errPortTaken)
	}
	return &markedError{msg: fmt.Sprintf("%s exited at start: %s", n.bin, reason), marks: marks}
}

// Stop ends every process the sandbox started (SIGTERM to all, then
// SIGKILL to those still running after 5 s) and removes its directory. It
// is safe to call more than once.
func (s *Sandbox) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(syscall.SIGTERM, 5*time.Second) })
	return s.stopErr
}

// kill ends a sandbox whose start failed: its servers hold nothing worth
// a graceful shutdown, and the start's deadline must hold.
func (s *Sandbox) kill() {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(syscall.SIGKILL, 0) })
}

func (s *Sandbox) shutdown(sig syscall.Signal, grace time.Duration) error {
	for _, n := range s.Nodes {
		if n.Running() {
			_ = n.cmd.Process.Signal(sig)
		}
	}
	left := waitExit(s.Nodes, grace)
	for _, n := range left {
		_ = n.cmd.Process.Kill()
	}
	var errs []error
	for _, n := range waitExit(left, 5*time.Second) {
		errs = append(errs, fmt.Errorf("server on %s (pid %d) did not exit", n.Addr, n.PID()))
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// waitExit waits up to d for nodes to exit and returns those still running.
func waitExit(nodes []*Node, d time.Duration) []*Node {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var left []*Node
	for _, n := range nodes {
		select {
		case <-n.done:
		case <-ctx.Done():
			if n.Running() {
				left = append(left, n)
			}
		}
	}
	return left
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
