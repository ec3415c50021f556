package serve

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/redisconn"
)

// ProbeTimeout bounds the start-up probe (the per-request deadline is far
// shorter, but a first EVAL compiles the script and a cluster client may
// still be reading the slot map).
const ProbeTimeout = 10 * time.Second

// KindProbe is the identity kind of the start-up probe's bucket.
const KindProbe = "probe"

// Probe runs two decisions of the limiter on a bucket of its own,
// "<prefix>:{probe:<uuid>}:<algo>", a key no client can reach: one by
// EVAL (the fallback after NOSCRIPT, so a flushed script cache cannot
// turn every request into a failure later) and one by EVALSHA (what every
// request runs). Both run the script's own commands (TIME and the reads
// and writes on the bucket) as the connected user, so a missing command or
// key permission shows now. The probe key is deleted afterwards; when the
// user may not DEL, it is set to expire in 1 ms (the script's PEXPIRE),
// and failing that it expires with the TTL the script gave it.
//
// A NOPERM is an exit-3 error naming the command and the ACL rule to add;
// so is a server that cannot be reached or whose script fails.
func (m *Middleware) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	l := m.limiter
	key := Identity{Kind: KindProbe, Value: uuid.NewString()}.Key(m.cfg.KeyPrefix, l.Params().Algo)
	defer m.dropProbe(key)
	what := fmt.Sprintf("serve: start-up probe of the %s limiter on %s", l.Params().Algo, key)
	reply, err := m.cfg.Client.Eval(ctx, l.Script().Source, []string{key}, l.Args(0, uuid.NewString())...).Result()
	if err == nil {
		_, err = l.Decode(reply)
	}
	if err != nil {
		return m.probeError(what+" (EVAL)", err)
	}
	if _, err := l.Allow(ctx, m.cfg.Client, key, 0); err != nil {
		return m.probeError(what+" (EVALSHA)", err)
	}
	return nil
}

func (m *Middleware) probeError(what string, err error) error {
	switch redisconn.Classify(err) {
	case redisconn.Canceled:
		return redisconn.Wrap(what, err)
	}
	if noPerm(err) {
		return exitcode.UnreachableError(fmt.Errorf("%s: %w; %s; serve's minimal ACL: %s", what, err, m.aclHint(err), strings.Join(m.ACLRules(), " ")))
	}
	switch redisconn.Classify(err) {
	case redisconn.Other, redisconn.WrongType, redisconn.NoScript, redisconn.Moved, redisconn.ReadOnly:
		return exitcode.Unreachablef("%s: %v; the limiter cannot run on this server, so serve does not start", what, err)
	}
	return redisconn.Wrap(what, err)
}

// noPerm reports whether err is an ACL refusal: NOPERM, or the form it
// takes on Redis 7 when a script calls a command its user may not run
// ("The user executing the script can't run this command ...").
func noPerm(err error) bool {
	return redisconn.Classify(err) == redisconn.NoPerm || strings.Contains(err.Error(), "user executing the script can't")
}

var scriptLine = regexp.MustCompile(`@user_script:(\d+)`)

// aclHint names the ACL rule to add for an ACL refusal: redisconn.ACLHint
// for NOPERM, else the command at the script line the server names.
func (m *Middleware) aclHint(err error) string {
	if !strings.Contains(err.Error(), "user executing the script can't") {
		return redisconn.ACLHint(err)
	}
	if sub := scriptLine.FindStringSubmatch(err.Error()); sub != nil {
		lines := strings.Split(m.limiter.Script().Source, "\n")
		if n, _ := strconv.Atoi(sub[1]); n >= 1 && n <= len(lines) {
			if c := scriptCall.FindStringSubmatch(lines[n-1]); c != nil {
				cmd := strings.ToLower(c[1])
				return fmt.Sprintf("the limiter script calls %s (line %d), which the ACL user may not run: add +%s to its rules (ACL SETUSER <user> +%s)",
					strings.ToUpper(cmd), n, cmd, cmd)
			}
		}
	}
	return "the ACL user may not run a command the limiter script calls (ACL LOG names it)"
}

var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z]+)['"]`)

// ACLRules are the ACL rules serve needs besides connecting: EVALSHA (every
// request), EVAL (after NOSCRIPT), each command the limiter script calls
// (scripts run as the calling user) and the keys under the key prefix,
// e.g. "+evalsha +eval +hmget +hset +pexpire +time ~rl:*". Connecting
// needs what redisconn asks for on top (see README "Safety").
func (m *Middleware) ACLRules() []string {
	seen := map[string]bool{}
	for _, sub := range scriptCall.FindAllStringSubmatch(m.limiter.Script().Source, -1) {
		seen["+"+strings.ToLower(sub[1])] = true
	}
	cmds := make([]string, 0, len(seen))
	for c := range seen {
		cmds = append(cmds, c)
	}
	slices.Sort(cmds)
	return append(append([]string{"+evalsha", "+eval"}, cmds...), "~"+globEscape(m.cfg.KeyPrefix)+":*")
}

// globEscape quotes the characters an ACL key pattern reads as glob syntax.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// dropProbe deletes the probe's key, which nothing else ever named.
func (m *Middleware) dropProbe(key string) {
	c, ok := m.cfg.Client.(redis.Cmdable)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.Del(ctx, key).Err() != nil {
		_ = c.PExpire(ctx, key, time.Millisecond).Err()
	}
}
