// Package redisconn turns what the user said about Redis (--redis, REDIS_URL,
// TLS flags, nothing at all) into a connected client: a single-node client,
// a cluster client when the server reports cluster_enabled:1, or an
// in-process miniredis when nothing was named and nothing listens on
// localhost:6379. It also identifies the server for every report.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
	"github.com/ratelimit-dev/ratelimit/userfile"
	"github.com/ratelimit-dev/ratelimit/wire"
)

// EmbeddedURL is the special --redis value that selects the in-process server.
const EmbeddedURL = "embedded"

// DefaultURL is tried when no URL is given.
const DefaultURL = "redis://localhost:6379/0"

// Options say how to connect.
type Options struct {
	// URL is --redis or REDIS_URL: redis://, rediss://, unix://, or "embedded".
	// Empty (with Source empty) means nothing was given: try DefaultURL
	// briefly, else start the embedded server.
	URL string
	// Source names where URL came from ("--redis", "REDIS_URL") so that
	// messages point there. When Source is set, a blank URL is bad input,
	// not "nothing given": `--redis "$UNSET"` never falls back to
	// localhost or the embedded server.
	Source string
	// TLS settings for rediss:// URLs.
	TLSCA, TLSCert, TLSKey string
	TLSSkipVerify          bool
	// Cluster forces the client kind when non-nil; nil detects it from INFO
	// (or, when INFO is refused, from CLUSTER SLOTS).
	Cluster *bool
	// Timeout applies to dialling and to each command; 0 means 2s, a
	// negative value is bad input.
	Timeout time.Duration
	// Notice receives one-line notices (which server was chosen when none
	// was named, --tls-skip-verify, an unknown mode); nil discards them.
	Notice io.Writer

	// DefaultURL replaces the package's DefaultURL as the address tried
	// when URL is empty (tests point it at a closed port so they never
	// reach a server on localhost:6379).
	DefaultURL string

	// probeTimeout replaces the 300 ms probe in tests.
	probeTimeout time.Duration
}

// Server identifies what a command ran against. It opens every report;
// its JSON form belongs to the document envelope (package doc), and
// Open fills it in.
type Server = doc.Server

// Conn is a connected client and what it is connected to.
type Conn struct {
	Client redis.UniversalClient
	Server Server

	single  *redis.Options // how to reach the seed node
	cluster bool
	mini    *miniredis.Miniredis
}

// Check validates opts as Open does, without connecting: a blank or
// malformed URL, a URL without a host, a port or database out of range, a
// negative timeout, TLS flags without rediss:// are bad input (exit 2).
// Nothing given (URL and Source empty) is valid. Callers use it to refuse
// bad input before doing any work.
func Check(opts Options) error {
	_, _, err := resolve(opts)
	return err
}

// resolve validates opts. It returns "" when nothing was given,
// EmbeddedURL for the embedded server, or the trimmed URL and its options.
func resolve(opts Options) (string, *redis.Options, error) {
	if opts.Timeout < 0 {
		return "", nil, exitcode.Usagef("the Redis timeout %s is negative; pass a positive duration such as --redis-timeout 2s", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	raw := strings.TrimSpace(opts.URL)
	switch {
	case raw == EmbeddedURL:
		if err := noTLSFlags(opts, "embedded"); err != nil {
			return "", nil, err
		}
		return raw, nil, nil
	case raw == "" && opts.Source != "":
		return "", nil, exitcode.Usagef("%s is empty (an unset variable?); pass a URL such as redis://127.0.0.1:6379/0, or leave out --redis and REDIS_URL to use localhost:6379 or the embedded server", opts.Source)
	case raw == "":
		return "", nil, nil
	}
	ro, err := parse(raw, opts)
	if err != nil {
		return "", nil, err
	}
	return raw, ro, nil
}

// Open resolves opts, connects, identifies the server and returns the
// client to use. Errors are exit-coded: bad input 2, unreachable or
// refused by the server's ACL 3.
func Open(ctx context.Context, opts Options) (*Conn, error) {
	Quiet()
	raw, ro, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	auto := false
	switch raw {
	case EmbeddedURL:
		return openEmbedded(opts, "--redis embedded")
	case "":
		def := opts.DefaultURL
		if def == "" {
			def = DefaultURL
		}
		probe := opts.probeTimeout
		if probe == 0 {
			probe = 300 * time.Millisecond
		}
		dro, err := redis.ParseURL(def)
		if err != nil {
			return nil, exitcode.Internalf("default Redis URL %s: %v", Redact(def), err)
		}
		if !answers(dro, probe) {
			if err := noTLSFlags(opts, "the embedded server"); err != nil {
				return nil, err
			}
			return openEmbedded(opts, "no --redis or REDIS_URL and nothing on "+dro.Addr)
		}
		opts.Source = ""
		if ro, err = parse(def, opts); err != nil {
			return nil, err
		}
		raw, auto = def, true
		notice(opts, "notice: no --redis or REDIS_URL; %s answered, using %s; pass --redis URL to test another server", dro.Addr, Redact(def))
	}
	if ro.TLSConfig != nil && ro.TLSConfig.InsecureSkipVerify {
		notice(opts, "warning: --tls-skip-verify: the server's certificate is not verified, so anyone on the path can read and change the traffic; pass --tls-ca outside tests")
	}
	return openServer(ctx, raw, ro, opts, auto)
}

func notice(opts Options, format string, args ...any) {
	if opts.Notice != nil {
		fmt.Fprintf(opts.Notice, format+"\n", args...)
	}
}

var quietOnce sync.Once

// Quiet stops go-redis from logging to stderr: its pool messages would
// interleave with reports, and every error reaches the user through the
// returned error instead.
func Quiet() {
	quietOnce.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
}

// answers reports whether something accepts a TCP (or unix) connection at
// the address within d.
func answers(ro *redis.Options, d time.Duration) bool {
	c, err := net.DialTimeout(ro.Network, ro.Addr, d)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func noTLSFlags(opts Options, what string) error {
	if opts.TLSCA != "" || opts.TLSCert != "" || opts.TLSKey != "" || opts.TLSSkipVerify {
		return exitcode.Usagef("TLS flags need a rediss:// URL, not %s", what)
	}
	return nil
}

// urlName is how messages call the URL: by where it came from.
func urlName(opts Options) string {
	switch opts.Source {
	case "":
		return "Redis URL"
	case "--redis":
		return "--redis URL"
	}
	return opts.Source
}

const wantURL = "want redis://host:port/db (user:password before the host, if any), rediss://..., unix:///path or embedded"

// parse reads a redis://, rediss:// or unix:// URL and applies the TLS
// flags. It refuses, before any connection, every URL go-redis would
// quietly complete with localhost:6379 (no host, an empty port). Error
// messages never contain the password, whether or not the URL parses.
func parse(raw string, opts Options) (*redis.Options, error) {
	// an error about the URL shows no userinfo, query value, unknown
	// option name or fragment, parsed or not (secret.RefusedURL)
	shown := secret.RefusedURL(raw, showable)
	if strings.ContainsFunc(shown, unicode.IsControl) {
		// url.Parse refuses control characters; show them escaped, on one line
		shown = strconv.Quote(shown)
	}
	bad := func(format string, args ...any) error {
		return exitcode.Usagef("invalid %s %s: %s; %s", urlName(opts), shown, fmt.Sprintf(format, args...), wantURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("%s", reason(err, nil))
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Opaque != "" || u.Hostname() == "" {
			return nil, bad("it names no host (built from unset variables?)")
		}
		if strings.HasSuffix(u.Host, ":") {
			return nil, bad("its port is empty (built from an unset variable?)")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, bad("port %.12s is out of range 1-65535", p)
			}
		}
	case "unix":
		if u.Opaque != "" || u.Path == "" {
			return nil, bad("it names no socket path (write unix:///path/to/redis.sock, with three slashes)")
		}
	case "":
		return nil, bad("it has no scheme (prefix it with redis://)")
	default:
		if u.Opaque != "" {
			// "localhost:6379" or "user:pw@host:6379": the scheme was
			// forgotten and the part before ':' was taken for one
			return nil, bad("it has no redis:// scheme (did you forget the prefix?)")
		}
		return nil, exitcode.Usagef("unsupported Redis URL scheme %q in %s; want redis://, rediss://, unix:// or embedded", u.Scheme, shown)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		// go-redis ignores it; what follows a '#' is most often the rest
		// of a password, and a document would show it
		return nil, bad("it has a fragment (#...), which no Redis URL has; write a '#' in a password as %%23")
	}
	ro, err := redis.ParseURL(raw)
	if err != nil {
		return nil, bad("%s", reason(err, u))
	}
	if ro.DB < 0 {
		return nil, bad("database %d is negative", ro.DB)
	}
	if err := checkSizes(ro, opts, shown); err != nil {
		return nil, err
	}
	ro.DialTimeout = opts.Timeout
	if ro.DialTimeout == 0 {
		ro.DialTimeout = 2 * time.Second
	}
	ro.DialerRetries = 2
	ro.MaintNotificationsConfig = NoMaintNotifications()
	// Honour context deadlines on every command, so a caller with a
	// tighter budget than --redis-timeout (serve's per-request limit) is
	// not held up.
	ro.ContextTimeoutEnabled = true
	ro.ReadTimeout = ro.DialTimeout
	ro.WriteTimeout = ro.DialTimeout
	if u.Scheme != "rediss" {
		if err := noTLSFlags(opts, shown); err != nil {
			return nil, err
		}
		// each command goes out inside the wait for its reply (package
		// wire): a decision costs the client half the system calls
		ro.Dialer = wire.Dialer(redis.NewDialer(ro))
		return ro, nil
	}
	tc := ro.TLSConfig
	if tc == nil {
		tc = &tls.Config{ServerName: u.Hostname()}
	}
	tc.MinVersion = tls.VersionTLS12
	if opts.TLSCA != "" {
		// a FIFO would block and /dev/zero never end: regular files only,
		// of a certificate's size
		pem, err := userfile.Read(opts.TLSCA, "--tls-ca", userfile.MaxTLS)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exitcode.Usagef("--tls-ca %s holds no PEM certificate", opts.TLSCA)
		}
		tc.RootCAs = pool
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, exitcode.Usagef("--tls-cert and --tls-key go together")
	}
	if opts.TLSCert != "" {
		certPEM, err := userfile.Read(opts.TLSCert, "--tls-cert", userfile.MaxTLS)
		if err != nil {
			return nil, err
		}
		keyPEM, err := userfile.Read(opts.TLSKey, "--tls-key", userfile.MaxTLS)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, exitcode.Usagef("load --tls-cert/--tls-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tc.InsecureSkipVerify = opts.TLSSkipVerify
	ro.TLSConfig = tc
	return ro, nil
}

var quoted = regexp.MustCompile(`"[^"]*"`)

// reason is a parser's complaint about a URL without the pieces of the URL
// it quotes (url.Parse and go-redis echo parts that may hold a password:
// `invalid port ":pw" after host`).
func reason(err error, u *url.URL) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := quoted.ReplaceAllString(err.Error(), "")
	msg = strings.TrimPrefix(msg, "net/url: ")
	msg = strings.TrimPrefix(msg, "redis: ")
	if i := strings.Index(msg, "URL path:"); i >= 0 {
		msg = msg[:i] + "URL path (want /db, e.g. /0)"
	}
	if i := strings.Index(msg, "unexpected option"); i >= 0 {
		// go-redis echoes the option names as typed; a name is the
		// user's text and may be a misplaced password ("?:pw@h")
		msg = msg[:i] + unexpectedOptions(u)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.TrimRight(msg, ": ")
	if msg == "" {
		msg = "it does not parse"
	}
	return secret.Redact(scrubQuery(scrub(msg, u), u))
}

// unexpectedOptions says which query options go-redis refused without
// naming any that is not one of go-redis's own names: a name is the
// user's text and may be a misplaced password ("?pwd=...", "?S3cr3t=1",
// "?:pw@h"). Those are counted by their place in the query, with a hint
// when the name looks like a credential or is close to an option.
func unexpectedOptions(u *url.URL) string {
	if u == nil {
		return "unexpected query option (not shown: it may be a secret)"
	}
	var named, places, hints []string
	parts := strings.Split(u.RawQuery, "&")
	for i, part := range parts {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		switch {
		case part == "" || queryOptions[name]:
		case refusedNames[name] != "":
			named = append(named, name+" ("+refusedNames[name]+")")
		default:
			places = append(places, strconv.Itoa(i+1))
			switch near := nearestOption(name); {
			case secret.IsCredentialParam(name):
				hints = append(hints, "a password goes in the URL's userinfo (user:password before the host)")
			case near != "":
				hints = append(hints, "did you mean "+near+"?")
			}
		}
	}
	var out []string
	if len(named) > 0 {
		out = append(out, "unexpected query option "+strings.Join(named, ", "))
	}
	if len(places) > 0 {
		s := fmt.Sprintf("query option %s of %d is not a go-redis option (its name is not shown: it may be a secret", places[0], len(parts))
		if len(places) > 1 {
			s = fmt.Sprintf("query options %s and %s of %d are not go-redis options (their names are not shown: they may be secrets",
				strings.Join(places[:len(places)-1], ", "), places[len(places)-1], len(parts))
		}
		slices.Sort(hints)
		if hints = slices.Compact(hints); len(hints) > 0 {
			s += "; " + strings.Join(hints, "; ")
		}
		out = append(out, s+")")
	}
	if len(out) == 0 {
		return "unexpected query option (not shown: it may be a secret)"
	}
	return strings.Join(out, "; ")
}

// queryOptions are the query options go-redis (v9.23, setupConnParams)
// reads from a URL.
var queryOptions = map[string]bool{
	"db": true, "protocol": true, "client_name": true, "max_retries": true, "min_retry_backoff": true, "max_retry_backoff": true,
	"dial_timeout": true, "read_timeout": true, "write_timeout": true, "pool_fifo": true, "pool_size": true, "pool_timeout": true,
	"min_idle_conns": true, "max_idle_conns": true, "max_active_conns": true, "max_concurrent_dials": true,
	"pipeline_pool_size": true, "pipeline_read_buffer_size": true, "pipeline_write_buffer_size": true,
	"conn_max_idle_time": true, "idle_timeout": true, "conn_max_lifetime": true, "max_conn_age": true,
	"conn_max_lifetime_jitter": true, "skip_verify": true,
}

// refusedNames are go-redis's own names (fields of its Options, options
// of its older releases) that it refuses as query options: safe to name,
// with what to do instead.
var refusedNames = map[string]string{
	"password": "the password goes in the URL's userinfo, user:password before the host",
	"username": "the user name goes in the URL's userinfo, user:password before the host",
	"addr":     "the address is the URL's host and port", "network": "the scheme says it: redis://, rediss:// or unix://",
	"read_buffer_size": "not a URL option of go-redis v9", "write_buffer_size": "not a URL option of go-redis v9",
	"dialer_retries": "not a URL option of go-redis v9", "dialer_retry_timeout": "not a URL option of go-redis v9",
	"identity_suffix": "not a URL option of go-redis v9", "unstable_resp3": "not a URL option of go-redis v9",
	"context_timeout_enabled": "not a URL option of go-redis v9", "idle_check_frequency": "not a URL option of go-redis v9",
}

// showable reports whether a query option name may be shown in an error:
// one of go-redis's own names, never the user's free text.
func showable(name string) bool { return queryOptions[name] || refusedNames[name] != "" }

// nearestOption returns the go-redis option within two edits of name
// ("pool_sise": pool_size), or "". Short names match nothing: a
// suggestion must not spell out most of what the user typed.
func nearestOption(name string) string {
	if len(name) < 5 {
		return ""
	}
	best, bestD := "", 3
	for o := range queryOptions {
		// ties go to the first in sorted order, whatever the map's
		if d := editDistance(strings.ToLower(name), o, 3); d < bestD || d == bestD && d < 3 && o < best {
			best, bestD = o, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is
// at least max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c = 1 + min(prev[j-1], prev[j], cur[j-1])
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

// Ceilings of the size-like client options of a URL: a pool of a
// billion connections is an out-of-memory crash before any dial.
const (
	MaxPoolSize   = 10000   // pool_size, min/max_idle_conns, max_active_conns, max_concurrent_dials, pipeline_pool_size
	MaxBufferSize = 1 << 20 // pipeline_read_buffer_size, pipeline_write_buffer_size: 1 MiB
)

// checkSizes refuses (exit 2) a size-like client option above its
// ceiling, naming the option and the ceiling.
func checkSizes(ro *redis.Options, opts Options, shown string) error {
	for _, o := range []struct {
		name, unit string
		v, max     int
	}{
		{"pool_size", "connections", ro.PoolSize, MaxPoolSize},
		{"min_idle_conns", "connections", ro.MinIdleConns, MaxPoolSize},
		{"max_idle_conns", "connections", ro.MaxIdleConns, MaxPoolSize},
		{"max_active_conns", "connections", ro.MaxActiveConns, MaxPoolSize},
		{"max_concurrent_dials", "dials", ro.MaxConcurrentDials, MaxPoolSize},
		{"pipeline_pool_size", "connections", ro.PipelinePoolSize, MaxPoolSize},
		{"pipeline_read_buffer_size", "bytes (1 MiB)", ro.PipelineReadBufferSize, MaxBufferSize},
		{"pipeline_write_buffer_size", "bytes (1 MiB)", ro.PipelineWriteBufferSize, MaxBufferSize},
	} {
		if o.v > o.max {
			return exitcode.Usagef("%s %s: %s is above the ceiling of %d %s; pass %s=%d or less", urlName(opts), shown, o.name, o.max, o.unit, o.name, o.max)
		}
	}
	return nil
}

// Redact returns the URL with any password replaced by "xxxxx", whether
// or not it parses (secret.URL): a forgotten scheme ("user:pw@host"),
// "redis:pw@host" or "redis:/:pw@host" never shows the password.
func Redact(raw string) string {
	if raw == EmbeddedURL {
		return raw
	}
	return secret.URL(raw)
}

// scrub removes the URL's secrets from a message, should a library have
// echoed them: the password, a lone user name (which some clients take for
// the password) and secret query parameters.
func scrub(msg string, u *url.URL) string {
	if u == nil {
		return msg
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, secret.Mask)
		} else if n := u.User.Username(); n != "" {
			msg = strings.ReplaceAll(msg, n, secret.Mask)
		}
	}
	for k, vs := range u.Query() {
		if secret.IsCredentialParam(k) {
			for _, v := range vs {
				if v != "" {
					msg = strings.ReplaceAll(msg, v, secret.Mask)
				}
			}
		}
	}
	return msg
}

// scrubQuery removes from a parser's complaint about a URL every query
// value and every name that is not an option's, should the parser have
// echoed them (short ones would mask words of the message itself).
func scrubQuery(msg string, u *url.URL) string {
	if u == nil {
		return msg
	}
	for k, vs := range u.Query() {
		if !showable(k) && len(k) >= 3 {
			msg = strings.ReplaceAll(msg, k, secret.Mask)
		}
		for _, v := range vs {
			if len(v) >= 3 {
				msg = strings.ReplaceAll(msg, v, secret.Mask)
			}
		}
	}
	return msg
}

// refused reports whether err is the server's NOPERM for the command cmd
// (lower case, as the server names it: "ping", "info", "cluster|slots").
// The server answered, so the connection and the login work.
func refused(err error, cmd string) bool {
	return Classify(err) == NoPerm && strings.Contains(strings.ToLower(err.Error()), "'"+cmd+"'")
}

// openServer connects and identifies the server. Nothing it sends is
// required by ACL except what the client kind needs: PING and INFO refused
// with NOPERM still connect (the server answered and the login worked);
// SELECT for a /db other than 0 and, for a cluster client, CLUSTER SLOTS
// are needed.
func openServer(ctx context.Context, raw string, ro *redis.Options, opts Options, auto bool) (*Conn, error) {
	shown := Redact(raw)
	fail := func(probe *redis.Client, err error) (*Conn, error) {
		_ = probe.Close()
		return nil, connectError(opts, ro, raw, err, auto)
	}
	probe := redis.NewClient(ro)
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := probe.Ping(pctx).Err(); err != nil && !refused(err, "ping") {
		return fail(probe, err)
	}
	srv := Server{Addr: shown, Mode: "standalone", Product: "redis"}
	infoDenied := false
	switch info, err := probe.Info(pctx, "server").Result(); {
	case err == nil:
		fields := infoFields(info)
		srv.Version = fields["redis_version"]
		if v, ok := fields["valkey_version"]; ok || fields["server_name"] == "valkey" {
			srv.Product = "valkey"
			if v != "" {
				srv.Version = v
			}
		}
	case refused(err, "info"):
		infoDenied = true
	case !answered(err):
		return fail(probe, err)
	}
	// a server that answers INFO cluster with an error other than NOPERM
	// (miniredis, a proxy) is taken as not a cluster, as before
	clusterOn, known := false, false
	if !infoDenied {
		switch info, err := probe.Info(pctx, "cluster").Result(); {
		case err == nil:
			clusterOn, known = infoFields(info)["cluster_enabled"] == "1", true
		case refused(err, "info"):
		case answered(err):
			known = true
		default:
			return fail(probe, err)
		}
	}
	// Without INFO, CLUSTER SLOTS tells a cluster node (slots) from a
	// standalone server (cluster support disabled); the cluster client
	// needs its answer anyway.
	var (
		slots     []redis.ClusterSlot
		slotsErr  error
		haveSlots bool
	)
	if !known && (opts.Cluster == nil || *opts.Cluster) {
		//lint:ignore SA1019 CLUSTER SLOTS on purpose: CLUSTER SHARDS is Redis 7+, and servers before it are supported
		slots, slotsErr = probe.ClusterSlots(pctx).Result()
		switch {
		case slotsErr == nil:
			clusterOn, known, haveSlots = true, true, true
		case clusterDisabled(slotsErr):
			clusterOn, known = false, true
		case refused(slotsErr, "cluster|slots"):
		default:
			return fail(probe, slotsErr)
		}
	}
	useCluster := clusterOn
	if opts.Cluster != nil {
		useCluster = *opts.Cluster
		if useCluster && known && !clusterOn {
			_ = probe.Close()
			return nil, exitcode.Usagef("--cluster=true but %s is not a cluster node (cluster support is disabled)", shown)
		}
	} else if !known {
		notice(opts, "notice: the ACL user may run neither INFO nor CLUSTER SLOTS, so whether %s is a cluster node is unknown; using a single-node client: pass --cluster if it is one (a cluster client needs +cluster|slots)", ro.Addr)
	}
	c := &Conn{Server: srv, single: ro}
	if !useCluster {
		c.Client = probe
		return c, nil
	}
	if ro.DB != 0 {
		_ = probe.Close()
		return nil, exitcode.Usagef("Redis Cluster has only database 0; drop /%d from %s", ro.DB, shown)
	}
	if !haveSlots {
		//lint:ignore SA1019 CLUSTER SLOTS on purpose: CLUSTER SHARDS is Redis 7+, and servers before it are supported
		slots, slotsErr = probe.ClusterSlots(pctx).Result()
	}
	if slotsErr != nil {
		return fail(probe, slotsErr)
	}
	_ = probe.Close()
	primaries := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			primaries[s.Nodes[0].ID+s.Nodes[0].Addr] = true
		}
	}
	c.cluster = true
	c.Server.Mode = "cluster"
	c.Server.Primaries = len(primaries)
	c.Client = c.NewClient(0)
	return c, nil
}

// answered reports whether err is the server's own error reply (it
// answered), not a network failure.
func answered(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && Classify(err) != Unreachable
}

func clusterDisabled(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "cluster support disabled")
}

// connectError explains why connecting failed, exit-coded: a database the
// server does not have is bad input (2); everything else is 3, with what
// to do next (the ACL rule to add, the password to check, TLS on the wrong
// kind of port, where the URL came from).
func connectError(opts Options, ro *redis.Options, raw string, err error, auto bool) error {
	u, _ := url.Parse(raw)
	msg := secret.Redact(scrub(err.Error(), u))
	addr := ro.Addr
	where := "check " + opts.Source
	switch {
	case auto:
		where = "no --redis or REDIS_URL was given, so " + addr + " was tried: pass --redis URL"
	case opts.Source == "":
		where = "check the Redis URL"
	}
	msg = strings.TrimSuffix(msg, ".")
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "DB index is out of range"):
		in := opts.Source
		if in == "" {
			in = "the URL"
		}
		return exitcode.Usagef("connect redis %s: database %d does not exist there (the server's 'databases' setting is lower); use a smaller /db in %s", addr, ro.DB, in)
	case Classify(err) == NoPerm:
		return exitcode.Unreachablef("connect redis %s: %s; %s", addr, msg, ACLHint(err))
	case Classify(err) == Busy:
		return exitcode.Unreachablef("connect redis %s: %s; %s", addr, msg, busyHint)
	case strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH") || strings.Contains(lower, "invalid password") || strings.Contains(lower, "invalid username-password"):
		return exitcode.Unreachablef("connect redis %s: %s; %s: the user name or password is wrong or missing", addr, msg, where)
	}
	hint := where + " or run 'ratelimit sandbox' for a disposable server"
	if ro.TLSConfig != nil {
		if strings.Contains(lower, "certificate") {
			hint = "pass --tls-ca with the CA that signed the server's certificate, or " + hint
		} else if Classify(err) == Unreachable || strings.Contains(lower, "tls") {
			hint = "the server may not speak TLS on this port (use redis:// for a plain port), or " + hint
		}
	} else if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		hint = "the server may require TLS (use rediss://), or " + hint
	}
	return exitcode.Unreachablef("connect redis %s: %s; %s", addr, msg, hint)
}

// NewClient returns a fresh client to the same target with the given pool
// size (0 keeps go-redis's default). The caller closes it.
func (c *Conn) NewClient(poolSize int) redis.UniversalClient {
	ro := *c.single
	if poolSize > 0 {
		ro.PoolSize = poolSize
		ro.MinIdleConns = 0
	}
	if !c.cluster {
		return redis.NewClient(&ro)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        []string{ro.Addr},
		Dialer:       ro.Dialer,
		Username:     ro.Username,
		Password:     ro.Password,
		TLSConfig:    ro.TLSConfig,
		DialTimeout:  ro.DialTimeout,
		ReadTimeout:  ro.ReadTimeout,
		WriteTimeout: ro.WriteTimeout,
		PoolSize:     ro.PoolSize,
		Protocol:     ro.Protocol,

		DialerRetries:         ro.DialerRetries,
		ContextTimeoutEnabled: ro.ContextTimeoutEnabled,
	})
}

// NewWaitingClient returns a fresh client to the same target whose
// commands never time out: reads and writes wait as long as the server
// takes, and a command waits as long as it must for a pooled connection
// (serve --limiter-timeout 0, a service that blocks on Redis). Dialling
// keeps the target's timeout, and a command is never retried (a
// decision must not count twice). The caller closes it.
func (c *Conn) NewWaitingClient(poolSize int) redis.UniversalClient {
	ro := *c.single
	ro.ReadTimeout, ro.WriteTimeout = -1, -1
	ro.PoolTimeout = 24 * time.Hour
	ro.MaxRetries = -1
	if poolSize > 0 {
		ro.PoolSize, ro.MinIdleConns = poolSize, 0
	}
	if !c.cluster {
		return redis.NewClient(&ro)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{ro.Addr}, Username: ro.Username, Password: ro.Password, TLSConfig: ro.TLSConfig,
		Dialer:      ro.Dialer,
		DialTimeout: ro.DialTimeout, ReadTimeout: -1, WriteTimeout: -1, PoolTimeout: ro.PoolTimeout,
		PoolSize: ro.PoolSize, Protocol: ro.Protocol, MaxRetries: -1, MaxRedirects: 8,
		DialerRetries: ro.DialerRetries, ContextTimeoutEnabled: ro.ContextTimeoutEnabled,
	})
}

// IsCluster reports whether the client is a cluster client.
func (c *Conn) IsCluster() bool { return c.cluster }

// Close closes the client and stops the embedded server, if any.
func (c *Conn) Close() error {
	var err error
	if c.Client != nil {
		err = c.Client.Close()
	}
	if c.mini != nil {
		// A user script looping for ever holds the embedded server's lock,
		// and miniredis cannot interrupt Lua: never let that hang the
		// process on its way out. The server dies with the process.
		done := make(chan struct{})
		go func() { c.mini.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(embeddedCloseWait):
		}
	}
	return err
}

// embeddedCloseWait bounds how long Close waits for the embedded server.
const embeddedCloseWait = 2 * time.Second

func openEmbedded(opts Options, why string) (*Conn, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("start embedded server: %w", err)
	}
	if opts.Notice != nil {
		// what embedded means for the results, the report's server line
		// says once; the notice says why and what to do
		fmt.Fprintf(opts.Notice, "notice: %s; using the embedded miniredis; pass --redis URL (or run 'ratelimit sandbox') to test a real server\n", why)
	}
	ro := &redis.Options{Addr: m.Addr(), DialTimeout: opts.Timeout, ReadTimeout: opts.Timeout, WriteTimeout: opts.Timeout, ContextTimeoutEnabled: true,
		MaintNotificationsConfig: NoMaintNotifications()}
	ro.Dialer = wire.Dialer(redis.NewDialer(ro))
	c := &Conn{
		Client: redis.NewClient(ro),
		Server: Server{Product: "miniredis", Version: miniredisVersion(), Mode: "embedded", Addr: "embedded", Embedded: true},
		single: ro,
		mini:   m,
	}
	return c, nil
}

func miniredisVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/alicebob/miniredis/v2" {
				return d.Version
			}
		}
	}
	return "v2"
}

func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// NoMaintNotifications turns go-redis's maintenance notifications off.
// The tool never uses them, and in go-redis v9.23's "auto" mode a server
// that refuses the handshake (every Redis before 8, miniredis) makes the
// client rewrite its shared options while connections of client.Conn()
// read them: a data race under -race, on every dedicated connection.
func NoMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
