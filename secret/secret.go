// Package secret hides passwords in text the tool shows: URLs the user
// typed (well formed or not), error messages that echo them, document
// fields. It knows nothing of Redis or HTTP; every package may import it.
package secret

import (
	"net/url"
	"strings"
)

// Mask replaces a hidden secret.
const Mask = "xxxxx"

// URL returns raw with the password of its userinfo and every secret
// query parameter masked. It never fails: text that does not parse as a
// URL is masked by Redact's rules, so a malformed URL (a forgotten scheme,
// "redis:pw@host", "redis:/:pw@host") never shows its password.
func URL(raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	// Rebuilding a URL without a host loses its slashes ("redis://" would
	// read "redis:"): mask such text as typed.
	// An '@' after the host ("//@h#:pw@x") leaves the parser's idea of the
	// userinfo and the reader's apart: mask as typed, too.
	if err != nil || u.Opaque != "" || u.Host == "" || (u.User == nil && strings.Contains(raw, "@")) ||
		strings.ContainsRune(u.Path+u.RawQuery+u.Fragment, '@') {
		return Redact(raw)
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if IsSecretParam(k) {
				q[k] = []string{Mask}
			}
		}
		u.RawQuery = q.Encode()
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else if u.User.Username() != "" {
			// go-redis takes a lone userinfo as the password
			u.User = url.User(Mask)
		}
	}
	return strings.Replace(u.String(), url.QueryEscape(Mask), Mask, -1)
}

// IsSecretParam reports whether a URL query parameter carries a secret
// (password=, sentinel_password=, passwd, pass, token, secret).
func IsSecretParam(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"pass", "secret", "token", "auth"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Redact masks whatever looks like a secret in free text: the part of a
// word before its last '@' (userinfo: "user:pw@", "pw@", with or without a
// scheme, parseable or not) keeps only its user name, and the value of a
// secret query parameter ("password=...") is masked. Words are separated by
// white space and quotes, so a password holding '/', ':' or '@' is still
// masked whole.
func Redact(s string) string {
	if !strings.ContainsAny(s, "@=") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !isSep(s[i]) {
			continue
		}
		b.WriteString(redactWord(s[start:i]))
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	return b.String()
}

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

func redactWord(w string) string {
	if at := strings.LastIndexByte(w, '@'); at > 0 && !faultSpec(w) {
		head, tail := w[:at], w[at:]
		prefix := ""
		// keep a scheme and its slashes: "redis://", "redis:/", "http://"
		keepUser := true
		if i := strings.Index(head, "://"); i >= 0 {
			prefix, head = head[:i+3], head[i+3:]
		} else if i := schemeSlash(head); i > 0 {
			// "redis:/:pw@h" is malformed: which part is the user is
			// a guess, so mask all of it
			prefix, head, keepUser = head[:i], head[i:], false
		}
		if user, _, ok := strings.Cut(head, ":"); ok && keepUser {
			head = user + ":" + Mask
		} else if head != "" {
			head = Mask
		}
		w = prefix + head + tail
	}
	if strings.Contains(w, "=") {
		w = redactParams(w)
	}
	return w
}

// schemeSlash returns the length of a leading "scheme:/" (one slash), or 0.
func schemeSlash(s string) int {
	i := strings.Index(s, ":/")
	if i <= 0 {
		return 0
	}
	for j := 0; j < i; j++ {
		c := s[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return 0
		}
	}
	return i + 2
}

// redactParams masks the values of secret parameters in a word such as
// "redis://h:1/0?password=pw&db=1" or "password=pw".
func redactParams(w string) string {
	var b strings.Builder
	i := 0
	for i < len(w) {
		eq := strings.IndexByte(w[i:], '=')
		if eq < 0 {
			b.WriteString(w[i:])
			break
		}
		eq += i
		// the parameter name runs back to '?', '&', ';', ',', ':' or the
		// word start ("token-bucket:burst=10" names burst, not a token)
		ks := strings.LastIndexAny(w[:eq], "?&;,:") + 1
		if ks < i {
			ks = i
		}
		b.WriteString(w[i : eq+1])
		end := strings.IndexAny(w[eq+1:], "&;")
		if end < 0 {
			end = len(w)
		} else {
			end += eq + 1
		}
		if IsSecretParam(w[ks:eq]) && end > eq+1 {
			b.WriteString(Mask)
			i = end
			continue
		}
		// a value may hold parameters of its own ("--redis=redis://h/0?password=pw"):
		// read on from just after the '='
		i = eq + 1
	}
	return b.String()
}

// faultKinds are the fault kinds of load --fault (package fault): a word
// such as "pause:2s@3s" or "drop-clients@10s" is the toolkit's own fault
// spec, not a "user:password@host".
var faultKinds = []string{"pause", "pause-write", "stop", "drop-clients", "flush-scripts", "failover", "restart"}

// faultSpec reports whether w is a fault spec, KIND[:DURATION]@OFFSET,
// perhaps behind a check id prefix ("fault:", "recover:") and before one
// punctuation mark. Durations are a digit followed by digits, '.', and
// the letters of Go duration units, so no password of other characters
// passes for one.
func faultSpec(w string) bool {
	w = strings.TrimRight(w, ":;,.)")
	for _, p := range []string{"fault:", "recover:", "("} {
		w = strings.TrimPrefix(w, p)
	}
	head, offset, ok := strings.Cut(w, "@")
	if !ok || !durationText(offset) {
		return false
	}
	kind, d, timed := strings.Cut(head, ":")
	if timed && !durationText(d) {
		return false
	}
	for _, k := range faultKinds {
		if kind == k {
			return true
		}
	}
	return false
}

func durationText(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' || len(s) > 24 || !strings.ContainsAny(s[len(s)-1:], "hmsn") {
		return false // a unit ends a duration: 10.0.0.5 or 1234 is not one
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || strings.ContainsRune("hmsuµn", c)) {
			return false
		}
	}
	return true
}
