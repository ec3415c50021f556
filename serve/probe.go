package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ProbeTimeout bounds the start-up probe (the per-request deadline is far
// shorter, but a first EVAL compiles the script and a cluster client may
// still be reading the slot map).
const ProbeTimeout = 10 * time.Second

// KindProbe is the identity kind of the start-up probe's bucket.
const KindProbe = "probe"

// Probe runs the limiter on a bucket of its own,
// "<prefix>:{probe:<uuid>}:<algo>", a key no client can reach, the way
// every request will (Store.Probe: by EVAL and by EVALSHA, as the
// connected user), so a missing command or key permission shows before
// the server listens. A NOPERM is an exit-3 error naming the rule to add
// and serve's minimal ACL; so is a server that cannot be reached or whose
// script fails.
func (m *Middleware) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	l := m.limiter
	key := Identity{Kind: KindProbe, Value: uuid.NewString()}.Key(m.cfg.KeyPrefix, l.Params().Algo)
	what := fmt.Sprintf("serve: start-up probe of the %s limiter on %s", l.Params().Algo, key)
	return m.cfg.Store.Probe(ctx, l, key, what, strings.Join(m.ACLRules(), " "))
}

// ACLRules are the ACL rules serve needs besides connecting: EVALSHA (every
// request), EVAL (after NOSCRIPT), each command the limiter script calls
// (scripts run as the calling user) and the keys under the key prefix,
// e.g. "+evalsha +eval +hmget +hset +pexpire +time ~rl:*". Connecting
// needs what redisconn asks for on top (see README "Safety").
func (m *Middleware) ACLRules() []string {
	rules := []string{"+evalsha", "+eval"}
	src := m.limiter.Script()
	for _, c := range src.Commands() {
		rules = append(rules, "+"+c)
	}
	return append(rules, "~"+globEscape(m.cfg.KeyPrefix)+":*")
}

// globEscape quotes the characters an ACL key pattern reads as glob syntax.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}
