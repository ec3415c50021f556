// Package secret hides passwords in text the tool shows: URLs the user
// typed (well formed or not), error messages that echo them, document
// fields. It knows nothing of Redis or HTTP; every package may import it.
package secret

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Mask replaces a hidden secret.
const Mask = "xxxxx"

// URL returns raw with the password of its userinfo and the values of
// its credential query parameters (IsCredentialParam, in the query and in
// the fragment) masked, everything else as typed. It never fails: text
// that does not parse as a URL is masked as one URL (a password holding a
// space or a quote is masked whole), so a malformed URL (a forgotten
// scheme, "redis:pw@host", "redis:/:pw@host") never shows its password.
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
		return malformedURL(raw)
	}
	// mask in place: everything else stays as typed (u.String() would
	// re-spell it), so URL(URL(s)) == URL(s)
	prefix, rest := schemePrefix(raw)
	if u.User != nil {
		at := strings.LastIndexByte(rest, '@')
		head := rest[:at]
		if _, ok := u.User.Password(); ok {
			user, _, _ := strings.Cut(head, ":")
			head = user + ":" + Mask
		} else if u.User.Username() != "" {
			// go-redis takes a lone userinfo as the password
			head = Mask
		}
		prefix, rest = prefix+head+"@", rest[at+1:]
	}
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	if before, query, ok := strings.Cut(rest, "?"); ok {
		rest = before + "?" + Query(query)
	}
	if hasFragment {
		// an OAuth implicit grant returns its access_token in the fragment
		rest += "#" + maskParams(fragment, "?&;#")
	}
	return prefix + rest
}

// Query returns a raw query string ("a=1&api_key=k") with the value of
// every credential parameter (IsCredentialParam) masked; names, order,
// separators and every other parameter stay as typed. Parameters are
// separated by '&' or ';', and by a stray '?' ("a=1?key=k" masks k).
func Query(raw string) string {
	return maskParams(raw, "?&;")
}

// maskParams masks the values of the credential parameters of s, whose
// parameters are separated by any byte of seps.
func maskParams(s, seps string) string {
	return hide(s, paramValues(s, seps))
}

// paramValues returns where the non-empty values of the credential
// parameters of s are, its parameters separated by any byte of seps.
func paramValues(s, seps string) [][2]int {
	var out [][2]int
	for i := 0; i <= len(s); {
		end := strings.IndexAny(s[i:], seps)
		if end < 0 {
			end = len(s)
		} else {
			end += i
		}
		if eq := strings.IndexByte(s[i:end], '='); eq >= 0 && i+eq+1 < end && IsCredentialParam(s[i:i+eq]) {
			out = append(out, [2]int{i + eq + 1, end})
		}
		i = end + 1
	}
	return out
}

// hide replaces each stretch of s that one or more of the ranges cover
// (overlapping or touching ranges make one stretch) with Mask.
func hide(s string, ranges [][2]int) string {
	if len(ranges) == 0 {
		return s
	}
	covered := make([]bool, len(s))
	for _, r := range ranges {
		for i := r[0]; i < r[1]; i++ {
			covered[i] = true
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if !covered[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		for i < len(s) && covered[i] {
			i++
		}
		b.WriteString(Mask)
	}
	return b.String()
}

// malformedURL masks raw, one URL that does not parse (or parses other
// than a reader would read it), as one word: its userinfo runs from the
// scheme to the last '@' whatever it holds, so a password with a space, a
// quote or a '<' is masked whole; only a user name of plain characters
// before the first ':' is kept. The values of credential parameters are
// masked wherever the query starts, '@' or not ("?pwd=p@ss" masks p@ss,
// not only p): both masks apply.
func malformedURL(raw string) string {
	if faultSpec(raw) {
		return raw // the toolkit's own "pause:2s@3s", not a URL
	}
	prefix, rest := schemePrefix(raw)
	ranges := paramValues(rest, "?&;#")
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		from := 0
		if user, _, ok := strings.Cut(rest[:at], ":"); ok && plainUser(user) && !strings.HasSuffix(prefix, ":/") {
			from = len(user) + 1
		}
		ranges = append(ranges, [2]int{from, at})
	}
	return prefix + hide(rest, ranges)
}

// schemePrefix splits a leading "scheme://", "scheme:/" or "//" off s.
// A "word:" without a slash stays: in "ops:pw@host" (the scheme
// forgotten) it is the user name.
func schemePrefix(s string) (prefix, rest string) {
	if strings.HasPrefix(s, "//") {
		return "//", s[2:]
	}
	if i := strings.IndexByte(s, ':'); i > 0 && isScheme(s[:i]) {
		switch {
		case strings.HasPrefix(s[i:], "://"):
			return s[:i+3], s[i+3:]
		case strings.HasPrefix(s[i:], ":/"):
			return s[:i+2], s[i+2:]
		}
	}
	return "", s
}

func isScheme(s string) bool {
	for j := 0; j < len(s); j++ {
		c := s[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// plainUser reports whether a user name is plain enough to show: letters,
// digits and "-._~" only (no separator a password could hide behind).
func plainUser(s string) bool {
	for j := 0; j < len(s); j++ {
		c := s[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// IsSecretParam reports whether a parameter in free text ("password=pw",
// sentinel_password=, passwd, pass, token, secret, auth) carries a
// secret. Inside a URL's query, IsCredentialParam's wider list applies.
func IsSecretParam(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"pass", "secret", "token", "auth"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// CredentialParams are the query parameter names whose values are
// credentials in practice (API keys, signatures of signed URLs, tokens),
// matched case-insensitively with '-' and '.' read as '_'. The README's
// Safety section lists them.
var CredentialParams = []string{
	"key", "apikey", "api_key", "sig", "signature", "token", "access_token", "auth", "authorization",
	"password", "passwd", "pwd", "pass", "secret", "client_secret", "credential", "credentials",
	"session", "sessionid", "session_id", "jwt",
	// OAuth: an authorization code, a signed assertion (RFC 7521, 7523)
	"code", "assertion", "client_assertion",
}

// CredentialSuffixes end the names of credential parameters too
// (private_key, x-amz-signature, refresh_token, app_secret).
var CredentialSuffixes = []string{"_key", "_token", "_secret", "_signature", "_sig", "_password", "_pwd", "_credential", "apikey"}

// IsCredentialParam reports whether a URL query parameter named name
// carries a credential: a name of CredentialParams, one ending in one of
// CredentialSuffixes (or, in camel case, in Key, Token, Secret, Signature
// or Password: apiKey, clientSecret), or one IsSecretParam takes. The name
// is read percent-decoded, without the control and invisible formatting
// characters a server may drop or stop at (api_key%00, a zero-width
// space), case-insensitively, with '-', '.', '[' and ']' as '_'
// (x-api-key, auth[api_key]).
func IsCredentialParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name))
	if IsSecretParam(name) {
		return true
	}
	for _, s := range []string{"Key", "Token", "Secret", "Signature", "Password"} {
		if i := len(name) - len(s); i > 0 && name[i:] == s && name[i-1] >= 'a' && name[i-1] <= 'z' {
			return true
		}
	}
	n := strings.Trim(strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', '[', ']':
			return '_'
		}
		return unicode.ToLower(r)
	}, name), "_")
	if slices.Contains(CredentialParams, n) {
		return true
	}
	for _, s := range CredentialSuffixes {
		if strings.HasSuffix(n, s) {
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
		if w := s[start:i]; strings.HasSuffix(s[:start], faultContext) && typedFaultSpec(w) {
			b.WriteString(w) // the user's own --fault value, shown as typed
		} else {
			b.WriteString(redactWord(w))
		}
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
		if i >= len(s) || s[i] != '"' {
			continue
		}
		if n := quotedURL(s[start:]); n > 0 {
			// a quoted URL (Go's url.Error: Get "http://h/?k=a b": ...)
			// is one URL, spaces and all
			b.WriteString(URL(s[start : start+n]))
			i = start + n - 1
			start = i + 1
		}
	}
	return b.String()
}

// quotedURL returns the length of the URL ("scheme://...") that s opens,
// up to the '"' that closes it on the same line, or 0.
func quotedURL(s string) int {
	i := strings.Index(s, "://")
	if i <= 0 || !isScheme(s[:i]) {
		return 0
	}
	end := strings.IndexAny(s, "\"\n")
	if end < 0 || s[end] != '"' {
		return 0
	}
	return end
}

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

func redactWord(w string) string {
	var ranges [][2]int
	if at := strings.LastIndexByte(w, '@'); at > 0 && !faultSpec(w) {
		head := w[:at]
		start := 0
		// keep a scheme and its slashes: "redis://", "redis:/", "http://"
		keepUser := true
		if i := strings.Index(head, "://"); i >= 0 {
			start = i + 3
		} else if i := schemeSlash(head); i > 0 {
			// "redis:/:pw@h" is malformed: which part is the user is
			// a guess, so mask all of it
			start, keepUser = i, false
		}
		if user, _, ok := strings.Cut(head[start:], ":"); ok && keepUser {
			start += len(user) + 1
		}
		ranges = append(ranges, [2]int{start, at})
	}
	if strings.Contains(w, "=") {
		// both masks apply: "?pwd=p@ss" hides p@ss, not only what comes
		// before the '@'
		ranges = append(ranges, secretValues(w)...)
	}
	return hide(w, ranges)
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

// secretValues returns where the values of secret parameters are in a
// word such as "redis://h:1/0?password=pw&db=1" or "password=pw".
func secretValues(w string) [][2]int {
	var out [][2]int
	i := 0
	for i < len(w) {
		eq := strings.IndexByte(w[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		// the parameter name runs back to '?', '&', '#', ';', ',', ':' or
		// the word start ("token-bucket:burst=10" names burst, not a token)
		ks := strings.LastIndexAny(w[:eq], "?&#;,:") + 1
		if ks < i {
			ks = i
		}
		// in a URL's query or fragment ("?api_key=", "&sig=") the wider
		// list of credential names applies; in free text ("key=value")
		// only the names that always mean a secret
		secretName := IsSecretParam
		if ks > 0 && (strings.IndexByte("?&#", w[ks-1]) >= 0 || w[ks-1] == ';' && strings.ContainsAny(w[:ks], "?#")) {
			secretName = IsCredentialParam
		}
		end := strings.IndexAny(w[eq+1:], "&;#")
		if end < 0 {
			end = len(w)
		} else {
			end += eq + 1
		}
		if secretName(w[ks:eq]) && end > eq+1 {
			out = append(out, [2]int{eq + 1, end})
			i = end
			continue
		}
		// a value may hold parameters of its own ("--redis=redis://h/0?password=pw"):
		// read on from just after the '='
		i = eq + 1
	}
	return out
}

// faultKinds are the fault kinds of load --fault (package fault): a word
// such as "pause:2s@3s" or "drop-clients@10s" is the toolkit's own fault
// spec, not a "user:password@host".
var faultKinds = []string{"pause", "pause-write", "stop", "drop-clients", "flush-scripts", "failover", "restart"}

// faultSpec reports whether w is a fault spec, KIND[:DURATION]@OFFSET,
// perhaps behind a check id prefix ("fault:", "recover:") and before one
// punctuation mark, or the syntax hint "KIND[:DURATION]@OFFSET" itself.
// Durations are a digit followed by digits, '.', and the letters of Go
// duration units, so no password of other characters passes for one.
func faultSpec(w string) bool {
	w = strings.TrimRight(w, ":;,.)")
	for _, p := range []string{"fault:", "recover:", "("} {
		w = strings.TrimPrefix(w, p)
	}
	switch w {
	case "KIND[:DURATION]@OFFSET", "KIND:DURATION@OFFSET", "KIND@OFFSET":
		return true // the syntax hint of package fault's errors
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

// faultContext is what package fault's errors put before the spec the
// user typed: invalid fault "pauze:2s@3s": unknown kind "pauze".
const faultContext = `invalid fault "`

// typedFaultSpec reports whether w, quoted after faultContext, is a fault
// spec as typed, valid or not ("pauze:2s@3s", "pause:2@3s", "pause:2s@3"):
// a word of letters and '-' for the kind, then a duration and an offset
// that a reader takes for mistyped durations, never for a password and a
// host. The value of --fault holds no secret, but a URL pasted there by
// mistake still is one: a '/' anywhere, a ':' or more than one '.' after
// the '@', or an offset that does not start with a digit ("db.internal",
// "10.0.0.5", "localhost:6379") leaves the word to the usual masking.
func typedFaultSpec(w string) bool {
	head, offset, ok := strings.Cut(w, "@")
	if !ok || strings.ContainsAny(w, "/\\") || strings.ContainsAny(offset, "@:") || strings.Count(offset, ".") > 1 ||
		offset != "" && (offset[0] < '0' || offset[0] > '9') {
		return false
	}
	kind, _, _ := strings.Cut(head, ":")
	if kind == "" || len(kind) > 24 {
		return false
	}
	for j := 0; j < len(kind); j++ {
		if c := kind[j] | 0x20; !(c >= 'a' && c <= 'z' || j > 0 && kind[j] == '-') {
			return false
		}
	}
	return true
}

// RefusedURL is how an error about a URL that is refused (it does not
// parse, or a client library rejects it) shows it: the scheme, host, port
// and path as typed, with nothing between the scheme's slashes and the
// last '@' (the userinfo, whatever it holds), no query value, no query
// parameter name that known does not accept, no fragment and no port
// that is not a number. known may be nil (no name is shown).
func RefusedURL(raw string, known func(name string) bool) string {
	prefix, rest := schemePrefix(raw)
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if strings.ContainsAny(rest[:at], "?#") && at+1 < len(rest) {
			// the '@' stands in the query or fragment: what follows is
			// a value, not a host
			return prefix + Mask + "@" + Mask
		}
		prefix, rest = prefix+Mask+"@", rest[at+1:]
	}
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	hostport, path, hasPath := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && i > strings.LastIndexByte(hostport, ']') {
		if port := hostport[i+1:]; strings.ContainsFunc(port, func(r rune) bool { return r < '0' || r > '9' }) {
			hostport = hostport[:i+1] + Mask // "redis://:pw" read as a port
		}
	}
	var b strings.Builder
	b.WriteString(prefix + hostport)
	if hasPath {
		b.WriteString("/" + path)
	}
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, value, hasValue := strings.Cut(part, "=")
			if n, err := url.QueryUnescape(name); err != nil || known == nil || !known(n) {
				name = Mask
			}
			b.WriteString(name)
			if hasValue {
				b.WriteByte('=')
				if value != "" {
					b.WriteString(Mask)
				}
			}
		}
	}
	if hasFragment {
		b.WriteByte('#')
		if fragment != "" {
			b.WriteString(Mask)
		}
	}
	return b.String()
}
