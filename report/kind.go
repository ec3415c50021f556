package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// kind is everything report knows about one document kind: how to read
// each version it accepts, and how to draw it in every format. Each kind
// declares one in its own file; kinds.go registers it with one line.
// Renderers are pure functions of the value T.
type kind[T any] struct {
	name string
	// version is the version this build writes; decode reads it.
	version int
	// older upgrades a document of an earlier version (the key) to T:
	// field names, units and derived checks as version would have them.
	older map[int]func([]byte) (T, error)
	// validate checks value ranges after decoding (see validate.go).
	validate func(T) error
	// checks are the document's checks: the one list every format
	// draws its verdict from.
	checks func(T) []doc.Check
	// verdict is the badge of the HTML page; nil: from checks, when the
	// kind has any.
	verdict  func(T) (pass, has bool)
	text     func(io.Writer, T, Options) error
	markdown func(*strings.Builder, T)
	junit    func(T) junitSuite
	// suites, when set, replaces junit in JUnit output: a kind whose
	// document holds several runs (suite: one per entry) writes one
	// <testsuite> each.
	suites func(T) []junitSuite
	html   func(*strings.Builder, T)
	// json and github replace the common renderers when set (keyslot
	// streams its keys and annotates files and lines).
	json   func(io.Writer, T) error
	github func(io.Writer, T) error
}

// kindInfo is a kind with its type erased, as the registry holds it.
type kindInfo struct {
	name     string
	order    int // place in the registration list (kinds.go)
	versions []int
	typ      reflect.Type
	decode   func(version int, data []byte) (any, error)
	validate func(any) error
	checks   func(any) []doc.Check
	verdict  func(any) (pass, has bool)
	text     func(io.Writer, any, Options) error
	markdown func(*strings.Builder, any)
	junit    func(any) junitSuite
	suites   func(any) []junitSuite
	html     func(*strings.Builder, any)
	json     func(io.Writer, any) error
	github   func(io.Writer, any) error
}

// entry erases k's type for the registry.
func (k kind[T]) entry() kindInfo {
	versions := []int{k.version}
	for v := range k.older {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	in := kindInfo{
		name: k.name, versions: versions, typ: reflect.TypeFor[T](),
		decode: func(version int, data []byte) (any, error) {
			if up, ok := k.older[version]; ok {
				return up(data)
			}
			var v T
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			err := dec.Decode(&v)
			return v, err
		},
		validate: func(v any) error { return k.validate(v.(T)) },
		checks:   func(v any) []doc.Check { return k.checks(v.(T)) },
		text:     func(w io.Writer, v any, o Options) error { return k.text(w, v.(T), o) },
		markdown: func(b *strings.Builder, v any) { k.markdown(b, v.(T)) },
		junit:    func(v any) junitSuite { return k.junit(v.(T)) },
		suites:   func(v any) []junitSuite { return []junitSuite{k.junit(v.(T))} },
		html:     func(b *strings.Builder, v any) { k.html(b, v.(T)) },
		json:     func(w io.Writer, v any) error { return JSON(w, v) },
	}
	in.verdict = func(v any) (bool, bool) {
		cs := k.checks(v.(T))
		return doc.Pass(cs), len(cs) > 0
	}
	if k.verdict != nil {
		in.verdict = func(v any) (bool, bool) { return k.verdict(v.(T)) }
	}
	if k.suites != nil {
		in.suites = func(v any) []junitSuite { return k.suites(v.(T)) }
	}
	if k.json != nil {
		in.json = func(w io.Writer, v any) error { return k.json(w, v.(T)) }
	}
	if k.github != nil {
		in.github = func(w io.Writer, v any) error { return k.github(w, v.(T)) }
	}
	return in
}

// registry holds the kinds by name.
type registry map[string]*kindInfo

func newRegistry(kinds ...kindInfo) registry {
	r := registry{}
	for i := range kinds {
		k := kinds[i]
		k.order = i
		if _, dup := r[k.name]; dup {
			panic("report: kind " + k.name + " registered twice")
		}
		r[k.name] = &k
	}
	return r
}

// of finds the kind of a result value and returns the value in the form
// its renderers take: a Document's value, a pointer dereferenced, or the
// address of a value whose kind takes a pointer (*tally.Result).
func (r registry) of(v any) (*kindInfo, any, error) {
	switch d := v.(type) {
	case Document:
		return r.of(d.Value)
	case *Document:
		return r.of(d.Value)
	}
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, nil, fmt.Errorf("report: no renderer for nil")
	}
	for _, k := range r {
		switch {
		case t == k.typ:
			return k, v, nil
		case t.Kind() == reflect.Pointer && t.Elem() == k.typ:
			rv := reflect.ValueOf(v)
			if rv.IsNil() {
				return nil, nil, fmt.Errorf("report: no renderer for a nil %T", v)
			}
			return k, rv.Elem().Interface(), nil
		case k.typ.Kind() == reflect.Pointer && k.typ.Elem() == t:
			p := reflect.New(t)
			p.Elem().Set(reflect.ValueOf(v))
			return k, p.Interface(), nil
		}
	}
	return nil, nil, fmt.Errorf("report: no renderer for %T", v)
}

// Checks returns the checks of a result value or Document, the list every
// format draws its verdict from.
func Checks(v any) ([]doc.Check, error) {
	k, val, err := kinds.of(v)
	if err != nil {
		return nil, err
	}
	return k.checks(val), nil
}
