package load

import (
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// A run sends identity k (load-<run>-<k> in --identity-header) on its
// iterations k, k+n, k+2n, ...: a run of a million identities that sends
// a hundred requests uses a hundred of them. So no request is built per
// identity up front (--identities 1000000 once took 1.3 GiB for 100
// requests): the request of identity k is built when k is first sent and
// kept for the first maxPrepared identities, the ones a run sends again
// and again; beyond them each send builds its own, which costs the
// allocation of one request and no memory that stays.
const maxPrepared = 4096

// identities hands out the prepared request of each identity, for either
// client: net/http's *http.Request (request) or the lean client's bytes
// (wire). It is safe for concurrent use; two VUs that build the same
// identity at once keep one of the two.
type identities struct {
	o *Options
	u *url.URL
	// n is how many identities the run sends: --identities, or 1 when it
	// sends none (every request alike).
	n int
	// template is the request without an identity, for net/http and the
	// preflight's proxy check.
	template *http.Request
	std      []atomic.Pointer[http.Request] // identities below maxPrepared
	lean     []atomic.Pointer[h1Request]
}

// newIdentities checks the target and builds the template request; an
// error is exit 2.
func newIdentities(o *Options, u *url.URL) (*identities, error) {
	req, err := http.NewRequest(o.Method, o.Target, nil)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message quotes the URL, password and all
		}
		return nil, exitcode.Usagef("--target %q: %v", secret.URL(o.Target), err)
	}
	for name, vs := range o.Headers {
		if http.CanonicalHeaderKey(name) == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[name] = append([]string(nil), vs...)
	}
	if len(o.Body) > 0 {
		req.ContentLength = int64(len(o.Body))
	}
	n := max(o.Identities, 1)
	return &identities{o: o, u: u, n: n, template: req,
		std: make([]atomic.Pointer[http.Request], min(n, maxPrepared)), lean: make([]atomic.Pointer[h1Request], min(n, maxPrepared))}, nil
}

// request is identity k's request for net/http (the template when the run
// sends no identity). Callers bind it to their context (WithContext),
// which copies it, and never change it.
func (ids *identities) request(k int) *http.Request {
	if ids.o.Identities == 0 {
		return ids.template
	}
	if k < len(ids.std) {
		if r := ids.std[k].Load(); r != nil {
			return r
		}
	}
	r := ids.template.Clone(ids.template.Context())
	r.Header.Set(ids.o.IdentityHeader, IdentityValue(ids.o.RunID, k))
	if k < len(ids.std) {
		ids.std[k].CompareAndSwap(nil, r)
		return ids.std[k].Load()
	}
	return r
}

// wire is identity k's request for the lean client, serialised.
func (ids *identities) wire(k int) *h1Request {
	if k < len(ids.lean) {
		if r := ids.lean[k].Load(); r != nil {
			return r
		}
	}
	id := ""
	if ids.o.Identities > 0 {
		id = IdentityValue(ids.o.RunID, k)
	}
	r := h1Prepare(ids.o, ids.u, id)
	if k < len(ids.lean) {
		ids.lean[k].CompareAndSwap(nil, &r)
		return ids.lean[k].Load()
	}
	return &r
}
