package report

import (
	"reflect"

	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/secret"
)

// maskSecrets masks on read what the writer masks on write, in a decoded
// document of any kind: the command line of its envelope (secret.Redact,
// as doc.Header.Stamp), the server's address and every field named Target
// (secret.URL, as the domains set it). A document written before a mask
// existed, or edited by hand, then shows no password nor credential query
// value in any format. It walks the value, so a kind added later is
// masked without a line here.
func maskSecrets(v any) any {
	if v == nil {
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if !rv.IsNil() {
			maskValue(rv.Elem(), 0)
		}
		return v
	}
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	maskValue(p.Elem(), 0)
	return p.Elem().Interface()
}

var (
	headerType = reflect.TypeFor[doc.Header]()
	serverType = reflect.TypeFor[doc.Server]()
)

// maskDepth bounds the walk: documents nest a few levels; a cycle (none
// exists in a decoded value) would stop here.
const maskDepth = 8

// maskValue masks v in place; v is addressable.
func maskValue(v reflect.Value, depth int) {
	if depth > maskDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			maskValue(v.Elem(), depth+1)
		}
	case reflect.Struct:
		switch v.Type() {
		case headerType:
			h := v.Addr().Interface().(*doc.Header)
			if h.Command != nil {
				cmd := make([]string, len(h.Command))
				for i, w := range h.Command {
					cmd[i] = secret.Redact(w)
				}
				h.Command = cmd
			}
			if h.Server != nil {
				s := *h.Server
				s.Addr = secret.URL(s.Addr)
				h.Server = &s
			}
			return
		case serverType:
			s := v.Addr().Interface().(*doc.Server)
			s.Addr = secret.URL(s.Addr)
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if f.Name == "Target" && fv.Kind() == reflect.String {
				fv.SetString(secret.URL(fv.String()))
				continue
			}
			switch fv.Kind() {
			case reflect.Struct, reflect.Pointer:
				maskValue(fv, depth+1)
			}
		}
	}
}
