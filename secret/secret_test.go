package secret

import (
	"os"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"invalid Redis URL ops:S3cr3tPW@127.0.0.1:16506", "invalid Redis URL ops:xxxxx@127.0.0.1:16506"},
		{`"addr":"redis:S3cr3tPW@127.0.0.1:1"`, `"addr":"redis:xxxxx@127.0.0.1:1"`},
		{"redis:/:PW@127.0.0.1:1", "redis:/xxxxx@127.0.0.1:1"},
		{"redis://u:p@ss/w@h:1/0", "redis://u:xxxxx@h:1/0"},
		{"redis://onlypw@h:1", "redis://xxxxx@h:1"},
		{"http://user:pw@api.test/x?q=1", "http://user:xxxxx@api.test/x?q=1"},
		{"redis://h:1/0?password=pw&db=1", "redis://h:1/0?password=xxxxx&db=1"},
		{"no secret here: key=value", "no secret here: key=value"},
		{"sentinel_password=abc", "sentinel_password=xxxxx"},
		{`--expect "token-bucket:burst=10,rate=5/s"`, `--expect "token-bucket:burst=10,rate=5/s"`}, // burst is not a token
		{"x:password=pw", "x:password=xxxxx"},
		{"--redis=redis://:pw2@h/0?password=pw3", "--redis=redis://:xxxxx@h/0?password=xxxxx"}, // a flag=value holding a URL
		{"--target=http://h/x?a=1&token=t", "--target=http://h/x?a=1&token=xxxxx"},
		{"a=b=c", "a=b=c"},
		// the toolkit's own fault specs are not userinfo; lookalikes are
		{"load: fault:pause:2s@3s: pause:2s@3s at 3.00s-5.04s", "load: fault:pause:2s@3s: pause:2s@3s at 3.00s-5.04s"},
		{"recover:drop-clients@3500ms; restart@2s, flush-scripts@1m30s.", "recover:drop-clients@3500ms; restart@2s, flush-scripts@1m30s."},
		{"pause:S3cr3t@3s", "pause:xxxxx@3s"},
		{"admin:2s@db.internal", "admin:xxxxx@db.internal"},
		{"pause:2s@db.internal", "pause:xxxxx@db.internal"},
		{"failover:2024@10.0.0.5", "failover:xxxxx@10.0.0.5"},
		{"restart:1234@127.0.0.1", "restart:xxxxx@127.0.0.1"},
		// a fault spec is shown as typed, valid or not, and so is its syntax hint
		{`invalid fault "pauze:2s@3s": unknown kind "pauze"; want KIND[:DURATION]@OFFSET such as pause:3s@10s`,
			`invalid fault "pauze:2s@3s": unknown kind "pauze"; want KIND[:DURATION]@OFFSET such as pause:3s@10s`},
		{`invalid fault "pause:2@3s"`, `invalid fault "pause:2@3s"`},
		{`invalid fault "pause:2s@3"`, `invalid fault "pause:2s@3"`},
		{`invalid fault "Pause:1m30x@1.5s"`, `invalid fault "Pause:1m30x@1.5s"`},
		{`invalid fault "pause:2s"; want KIND[:DURATION]@OFFSET`, `invalid fault "pause:2s"; want KIND[:DURATION]@OFFSET`},
		// a URL pasted into --fault by mistake is still masked
		{`invalid fault "ops:pw@db.internal"`, `invalid fault "ops:xxxxx@db.internal"`},
		{`invalid fault "ops:pw@10.5.0.1"`, `invalid fault "ops:xxxxx@10.5.0.1"`},
		{`invalid fault "ops:pw@localhost:6379"`, `invalid fault "ops:xxxxx@localhost:6379"`},
		{`invalid fault "ops:p4ss@10.5:6379"`, `invalid fault "ops:xxxxx@10.5:6379"`},
		{`invalid fault "redis://u:pw@h:1"`, `invalid fault "redis://u:xxxxx@h:1"`},
		{`invalid fault "pw@h/0"`, `invalid fault "xxxxx@h/0"`},
		// outside a fault error, only a well-formed spec is taken for one
		{"pauze:2s@3s", "pauze:xxxxx@3s"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://u:pw@127.0.0.1:6379/0", "redis://u:xxxxx@127.0.0.1:6379/0"},
		{"redis://pw@127.0.0.1:6379", "redis://xxxxx@127.0.0.1:6379"},
		{"redis://127.0.0.1:6379/0?password=pw", "redis://127.0.0.1:6379/0?password=xxxxx"},
		{"ops:S3cr3tPW@127.0.0.1:16506", "ops:xxxxx@127.0.0.1:16506"},
		{"redis:S3cr3tPW@127.0.0.1:1", "redis:xxxxx@127.0.0.1:1"},
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"embedded", "embedded"},
		{"redis://", "redis://"},
		{"redis:///0?password=pw", "redis:///0?password=xxxxx"},
		{"unix:///run/redis.sock", "unix:///run/redis.sock"},
		// found by FuzzPasswordNotShown: the parser takes "@0" for the
		// authority and the rest for a fragment
		// (masked as one word up to the last '@': more than the password)
		{"//@0#:S3cr3tPW@0", "//xxxxx@0"},
		{"redis://h:1/0?x=a:S3cr3tPW@h", "redis://h:xxxxx@h"}, // ambiguous: masks more
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzRedact: a password placed in userinfo or a password= parameter never
// survives, whatever surrounds it.
func FuzzRedact(f *testing.F) {
	f.Add("redis://", "u", "S3cr3tPW", "127.0.0.1:1/0")
	f.Add("", "ops", "S3cr3tPW", "h:1")
	f.Add("redis:", "", "S3cr3tPW", "h")
	f.Fuzz(func(t *testing.T, scheme, user, pw, host string) {
		for _, c := range scheme + user + pw + host {
			if c < '!' || c > '~' || c == '%' {
				return // URLs are typed in printable ASCII; escapes would re-spell the password
			}
		}
		// a '/' in a password must be percent-encoded in a URL; unescaped
		// it makes "a://b:c//d@h" ambiguous, so it is left out here
		if len(pw) < 6 || strings.Contains(pw, "/") || strings.ContainsAny(pw+user+scheme, " \t\r\n\"'`<>@") || strings.Contains("x "+scheme+user+":"+Mask+"@"+host+" y", pw) ||
			strings.Contains(scheme+Mask+"@"+host, pw) || strings.Contains(scheme+user+Mask, pw) || strings.ContainsAny(host, " \t\r\n\"'`<>@") {
			return
		}
		words := []string{scheme + user + ":" + pw + "@" + host, "x " + scheme + user + ":" + pw + "@" + host + " y"}
		if !strings.Contains(pw, ":") {
			// a lone userinfo is all password only without a colon:
			// "a:b@" is user a, password b
			words = append(words, scheme+pw+"@"+host)
		}
		for _, s := range words {
			if out := Redact(s); strings.Contains(out, pw) {
				t.Fatalf("Redact(%q) = %q keeps the password", s, out)
			}
			if out := URL(s); strings.Contains(out, pw) {
				t.Fatalf("URL(%q) = %q keeps the password", s, out)
			}
		}
	})
}

// TestURLCredentialParams: the values of credential query parameters of
// a target URL are masked (issue 26), whatever their case or spelling;
// everything else stays as typed, in its order.
func TestURLCredentialParams(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://h/lim?api_key=S3cr3t", "http://h/lim?api_key=xxxxx"},
		{"https://h:8443/x?b=2&key=S3cr3t&a=1", "https://h:8443/x?b=2&key=xxxxx&a=1"}, // order kept
		{"http://h/x?sig=S3cr3t;q=1", "http://h/x?sig=xxxxx;q=1"},
		{"http://h/x?Signature=S3cr3t&X-Amz-Signature=S3cr3t&X-Amz-Credential=AKIA%2F1&X-Amz-Security-Token=S3cr3t&X-Amz-Date=20260101",
			"http://h/x?Signature=xxxxx&X-Amz-Signature=xxxxx&X-Amz-Credential=xxxxx&X-Amz-Security-Token=xxxxx&X-Amz-Date=20260101"},
		{"http://h/x?APIKEY=S3cr3t&apiKey=S3cr3t&x-api-key=S3cr3t&api%5Fkey=S3cr3t", "http://h/x?APIKEY=xxxxx&apiKey=xxxxx&x-api-key=xxxxx&api%5Fkey=xxxxx"},
		{"http://h/x?access_token=S3cr3t&pwd=S3cr3t&client_secret=S3cr3t&private_key=S3cr3t&auth[key]=S3cr3t", "http://h/x?access_token=xxxxx&pwd=xxxxx&client_secret=xxxxx&private_key=xxxxx&auth[key]=xxxxx"},
		{"http://h/x?monkey=1&keys=2&key=&q=a+b", "http://h/x?monkey=1&keys=2&key=&q=a+b"}, // not credentials, or nothing to mask
		{"http://u:pw@h/x?token=S3cr3t", "http://u:xxxxx@h/x?token=xxxxx"},
		{"http://h/cb#access_token=S3cr3t&state=1", "http://h/cb#access_token=xxxxx&state=1"},
		// parsed or not, one URL: a space or quote in a value or a
		// password is masked with it
		{"http://h/x?api_key=S3 cr3t&q=1", "http://h/x?api_key=xxxxx&q=1"},
		{"http://u:S3cr3t AB@h/x", "http://u:xxxxx@h/x"},
		{"redis://u:S3cr3t\"AB@h", "redis://u:xxxxx@h"},
		{"redis://S3cr3t`AB@h", "redis://xxxxx@h"},
		{"redis://u<x:S3cr3t@h", "redis://xxxxx@h"}, // not a plain user name: all masked
		{"http://h/x?email=a@b.example&api_key=S3cr3t", "http://xxxxx@b.example&api_key=xxxxx"},
		// a value holding '@' is masked whole, not only up to the '@'
		{"http://h/x?pwd=p@S3cr3t", "http://xxxxx"},
		{"redis://u:x&token=S3@h", "redis://u:xxxxx@h"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := URL(tt.want); got != tt.want {
			t.Errorf("URL(%q) = %q, want it unchanged (idempotent)", tt.want, got)
		}
	}
	// the command line in a document goes through Redact: the same names
	// are masked inside a URL's query, not in free text
	for in, want := range map[string]string{
		"--target=http://h/x?a=1&api_key=S3cr3t": "--target=http://h/x?a=1&api_key=xxxxx",
		"http://h/x?sig=S3cr3t#key=S3cr3t":       "http://h/x?sig=xxxxx#key=xxxxx",
		"lookup key=value":                       "lookup key=value",
		"--target http://h/x?pwd=p@S3cr3t":       "--target http://xxxxx",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestREADMEListsCredentialParams: the Safety page (docs/safety.md,
// linked from the README) names every credential parameter and suffix
// that is masked.
func TestREADMEListsCredentialParams(t *testing.T) {
	b, err := os.ReadFile("../docs/safety.md")
	if err != nil {
		t.Fatal(err)
	}
	safety := string(b)
	for _, n := range append(CredentialParams, CredentialSuffixes...) {
		if !strings.Contains(safety, "`"+n+"`") {
			t.Errorf("README's Safety section does not list `%s`", n)
		}
	}
}

// FuzzURLCredential: the value of a credential query parameter never
// survives URL, wherever it stands and whatever surrounds it; URL is
// idempotent and never panics.
func FuzzURLCredential(f *testing.F) {
	f.Add(uint8(0), false, "127.0.0.1:8011", "/lim", "a=1&", uint8(0), "S3cr3tValue", "&b=2")
	f.Add(uint8(1), true, "api.example", "/v1/x", "", uint8(4), "abc/def:ghi", "#frag")
	f.Add(uint8(0), false, "h", "/x@y", "email=a@b&", uint8(30), "S3 cr3t\"<`", "")
	f.Add(uint8(2), false, "", "", "", uint8(7), "S3cr3tPW", ";q=1")
	f.Fuzz(func(t *testing.T, scheme uint8, upper bool, host, path, before string, name uint8, value, after string) {
		names := append(append([]string{}, CredentialParams...), "x-api-key", "X-Amz-Signature", "clientSecret", "private_key", "auth[token]", "api%5Fkey")
		n := names[int(name)%len(names)]
		if upper {
			n = strings.ToUpper(n)
		}
		if len(value) < 6 || strings.ContainsAny(value, "&;#%=?") || strings.Contains(value, Mask[:1]) || strings.ContainsFunc(value, func(r rune) bool { return r < ' ' || r > '~' }) {
			return // a value ends at a separator; an escape would re-spell it
		}
		if before != "" && !strings.ContainsAny(before[len(before)-1:], "&;?#") || after != "" && !strings.ContainsAny(after[:1], "&;#") {
			return // the name or the value would run on into its neighbours
		}
		raw := []string{"http", "https", "redis"}[int(scheme)%3] + "://" + host + path + "?" + before + n + "=" + value + after
		if strings.Count(raw, value) != 1 || strings.Contains(strings.Replace(raw, value, Mask, 1), value[:len(value)-1]) {
			return // the value is also someone else's text
		}
		got := URL(raw)
		if strings.Contains(got, value) {
			t.Fatalf("URL(%q) = %q keeps the value of %s", raw, got, n)
		}
		if again := URL(got); again != got {
			t.Fatalf("URL(URL(%q)) = %q, want %q (not idempotent)", raw, again, got)
		}
		if s := before + value + after; URL(URL(s)) != URL(s) {
			t.Fatalf("URL(URL(%q)) = %q, want %q (not idempotent)", s, URL(URL(s)), URL(s))
		}
	})
}

func TestRefusedURL(t *testing.T) {
	known := func(n string) bool { return n == "db" || n == "pool_size" }
	tests := []struct{ in, want string }{
		{"redis://127.0.0.1/0?pwd=S3cr3t", "redis://127.0.0.1/0?xxxxx=xxxxx"},
		{"redis://127.0.0.1/0?S3cr3t=1&db=2&pool_size=", "redis://127.0.0.1/0?xxxxx=xxxxx&db=xxxxx&pool_size="},
		{"redis://u:S3cr3t AB@h:1/0", "redis://xxxxx@h:1/0"},
		{"redis://u:p@ss@h", "redis://xxxxx@h"},
		{"ops:S3cr3t@127.0.0.1:1", "xxxxx@127.0.0.1:1"},
		{"redis:/:S3cr3t@h", "redis:/xxxxx@h"},
		{"redis://:S3cr3t", "redis://:xxxxx"},
		{"redis://[::1]:7000/3", "redis://[::1]:7000/3"},
		{"redis://h/0?x=a@S3cr3t", "redis://xxxxx@xxxxx"},
		{"redis://h/0#S3cr3t", "redis://h/0#xxxxx"},
		{"unix:///run/redis.sock?db=1", "unix:///run/redis.sock?db=xxxxx"},
	}
	for _, tt := range tests {
		if got := RefusedURL(tt.in, known); got != tt.want {
			t.Errorf("RefusedURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRedactQuotedURL: a URL in quotes (as Go's HTTP client quotes it in
// its errors) is masked as one URL, a space in a value or password too.
func TestRedactQuotedURL(t *testing.T) {
	for in, want := range map[string]string{
		`Get "http://127.0.0.1:1/x?api_key=S3cr3t AB": dial tcp 127.0.0.1:1: connect: connection refused`: `Get "http://127.0.0.1:1/x?api_key=xxxxx": dial tcp 127.0.0.1:1: connect: connection refused`,
		`Post "http://u:S3cr3t AB@h/x": EOF`:  `Post "http://u:xxxxx@h/x": EOF`,
		`"addr":"redis:S3cr3tPW@127.0.0.1:1"`: `"addr":"redis:xxxxx@127.0.0.1:1"`,
		`say "http://h/x?q=1 and more`:        `say "http://h/x?q=1 and more`,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCredentialNamesDecoded (issue 32): a name is compared after
// decoding, so an encoded control character beside it (api_key%00, a
// zero-width space) does not hide it, and the OAuth names that carry a
// credential (an authorization code, a signed assertion) are masked.
func TestCredentialNamesDecoded(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://h/cb?code=S3cr3t&state=1", "http://h/cb?code=xxxxx&state=1"},
		{"http://h/t?assertion=S3cr3t&client_assertion=S3cr3t&client_assertion_type=jwt-bearer",
			"http://h/t?assertion=xxxxx&client_assertion=xxxxx&client_assertion_type=jwt-bearer"},
		{"http://h/x?api_key%00=S3cr3t", "http://h/x?api_key%00=xxxxx"},
		{"http://h/x?%00api_key=S3cr3t", "http://h/x?%00api_key=xxxxx"},
		{"http://h/x?api%00_key=S3cr3t", "http://h/x?api%00_key=xxxxx"},
		{"http://h/x?api_key%E2%80%8B=S3cr3t", "http://h/x?api_key%E2%80%8B=xxxxx"}, // a zero-width space
		{"http://h/x?CODE%09=S3cr3t", "http://h/x?CODE%09=xxxxx"},
		{"http://h/x?zipcode=1&codes=2&country_code=3", "http://h/x?zipcode=1&codes=2&country_code=3"},
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Redact("--target " + tt.in); got != "--target "+tt.want {
			t.Errorf("Redact(%q) = %q, want %q", "--target "+tt.in, got, "--target "+tt.want)
		}
	}
}
