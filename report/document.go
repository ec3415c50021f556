package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/race"
)

// ErrDocument marks input that is not a result document this build can
// read: not JSON, truncated, foreign JSON, an unknown kind or version.
var ErrDocument = errors.New("not a ratelimit document")

// Document is a decoded result document.
type Document struct {
	Kind    string
	Version int
	// Source names where the document came from (a file name), for
	// headings; it may be empty.
	Source string
	// Value is eval.Result, eval.SimResult, eval.Catalog, race.Result,
	// *load.Result or cluster.Result.
	Value any
}

// kindInfo says how to read the documents of one kind.
type kindInfo struct {
	versions []int
	decode   func([]byte) (any, error)
	formats  []string
}

func decodeAs[T any](data []byte) (any, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

func decodeLoad(data []byte) (any, error) {
	var v load.Result
	err := json.Unmarshal(data, &v)
	return &v, err
}

// fmtAll are the -o formats every kind renders to; every kind also has
// an HTML page (HTML).
var fmtAll = []string{"text", "json", "markdown", "junit", "github"}

// kinds are the documents `ratelimit report` reads, by their "kind".
var kinds = map[string]kindInfo{
	"eval":     {versions: []int{1}, decode: decodeAs[eval.Result], formats: fmtAll},
	"simulate": {versions: []int{1}, decode: decodeAs[eval.SimResult], formats: fmtAll},
	"scripts":  {versions: []int{1}, decode: decodeAs[eval.Catalog], formats: fmtAll},
	"race":     {versions: []int{race.Version}, decode: decodeAs[race.Result], formats: fmtAll},
	"load":     {versions: []int{1}, decode: decodeLoad, formats: fmtAll},
	"keyslot":  {versions: []int{cluster.Version}, decode: decodeAs[cluster.Result], formats: fmtAll},
}

// Kinds lists the document kinds Decode reads, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Formats lists the -o formats documents of kind render to; nil for an
// unknown kind.
func Formats(kind string) []string {
	return slices.Clone(kinds[kind].formats)
}

// Decode reads one result document, checking its "kind" and "version"
// before decoding the rest. Every error wraps ErrDocument and is one line.
func Decode(data []byte) (Document, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return Document{}, fmt.Errorf("%w: the file is empty", ErrDocument)
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset >= int64(len(trimmed)) || strings.Contains(fmt.Sprint(err), "unexpected end") {
			return Document{}, fmt.Errorf("%w: truncated JSON (it ends after %d bytes in the middle of a value); save the document again", ErrDocument, len(trimmed))
		}
		return Document{}, fmt.Errorf("%w: not JSON (%v)", ErrDocument, Printable(err.Error()))
	}
	if trimmed[0] != '{' {
		return Document{}, fmt.Errorf("%w: foreign JSON (a document is an object with \"kind\" and \"version\")", ErrDocument)
	}
	if err := checkDuplicateKeys(trimmed); err != nil {
		return Document{}, err
	}
	var h struct {
		Kind    *string `json:"kind"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(trimmed, &h); err != nil || h.Kind == nil || h.Version == nil {
		return Document{}, fmt.Errorf("%w: foreign JSON without a \"kind\" and a numeric \"version\"; pass files saved by load --out, race --out, keyslot -o json or eval -o json", ErrDocument)
	}
	info, ok := kinds[*h.Kind]
	if !ok {
		return Document{}, fmt.Errorf("%w: unknown kind %s; this ratelimit reads %s", ErrDocument, Printable(strconv.Quote(*h.Kind)), strings.Join(Kinds(), ", "))
	}
	if !slices.Contains(info.versions, *h.Version) {
		return Document{}, fmt.Errorf("%w: %s document version %d is not supported (this ratelimit reads version %s); use the ratelimit that wrote it",
			ErrDocument, *h.Kind, *h.Version, joinInts(info.versions))
	}
	v, err := info.decode(trimmed)
	if err != nil {
		if te := typeError(err); te != nil {
			return Document{}, te
		}
		return Document{}, fmt.Errorf("%w: %s document does not fit version %d: %v", ErrDocument, *h.Kind, *h.Version, Printable(err.Error()))
	}
	if err := validate(v); err != nil {
		return Document{}, err
	}
	return Document{Kind: *h.Kind, Version: *h.Version, Value: v}, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// docKind returns the kind of a result value and the value in the form
// the renderers take (pointers are dereferenced, except *load.Result).
func docKind(doc any) (string, any, error) {
	switch d := doc.(type) {
	case Document:
		return docKind(d.Value)
	case *Document:
		return docKind(d.Value)
	case eval.Result:
		return "eval", d, nil
	case *eval.Result:
		return "eval", *d, nil
	case eval.SimResult:
		return "simulate", d, nil
	case *eval.SimResult:
		return "simulate", *d, nil
	case eval.Catalog:
		return "scripts", d, nil
	case *eval.Catalog:
		return "scripts", *d, nil
	case race.Result:
		return "race", d, nil
	case *race.Result:
		return "race", *d, nil
	case load.Result:
		return "load", &d, nil
	case *load.Result:
		return "load", d, nil
	case cluster.Result:
		return "keyslot", d, nil
	case *cluster.Result:
		return "keyslot", *d, nil
	}
	return "", nil, fmt.Errorf("report: no renderer for %T", doc)
}
