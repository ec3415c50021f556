package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrDocument marks input that is not a result document this build can
// read: not JSON, truncated, foreign JSON, an unknown kind or version.
var ErrDocument = errors.New("not a ratelimit document")

// Document is a decoded result document.
type Document struct {
	Kind string
	// Version is the version of the document as read; Value is always of
	// the version this build writes (older ones are upgraded on read).
	Version int
	// Source names where the document came from (a file name), for
	// headings; it may be empty.
	Source string
	// Value is eval.Result, eval.SimResult, eval.Catalog, race.Result,
	// *tally.Result or cluster.Result.
	Value any
}

// Formats every kind renders to; every kind also has an HTML page (HTML).
var fmtAll = []string{"text", "json", "markdown", "junit", "github"}

// Kinds lists the document kinds Decode reads, in the order kinds.go
// registers them (eval, simulate, scripts, race, load, ...).
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return kinds[a].order - kinds[b].order })
	return out
}

// Formats lists the -o formats documents of kind render to; nil for an
// unknown kind.
func Formats(kind string) []string {
	if _, ok := kinds[kind]; !ok {
		return nil
	}
	return slices.Clone(fmtAll)
}

// Versions lists the versions of kind that Decode reads, oldest first.
func Versions(kind string) []int {
	if k, ok := kinds[kind]; ok {
		return slices.Clone(k.versions)
	}
	return nil
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
	v, err := info.decode(*h.Version, trimmed)
	if err != nil {
		if te := typeError(err); te != nil {
			return Document{}, te
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return Document{}, fmt.Errorf("%w: a %s document has no field %s: the body is not a %s document's (another kind's, or edited)", ErrDocument, *h.Kind, Printable(f), *h.Kind)
		}
		return Document{}, fmt.Errorf("%w: %s document does not fit version %d: %v", ErrDocument, *h.Kind, *h.Version, Printable(err.Error()))
	}
	if err := info.validate(v); err != nil {
		return Document{}, err
	}
	return Document{Kind: *h.Kind, Version: *h.Version, Value: maskSecrets(v)}, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// docKind returns the kind of a result value and the value in the form
// the renderers take (see registry.of).
func docKind(v any) (string, any, error) {
	k, val, err := kinds.of(v)
	if err != nil {
		return "", nil, err
	}
	return k.name, val, nil
}
