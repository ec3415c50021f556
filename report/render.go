package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Render writes one result document in format: "text", "json",
// "markdown", "junit" or "github" (every kind has each; HTML writes the
// page of several). doc is a result value (eval.Result, eval.SimResult,
// eval.Catalog, race.Result, tally.Result or *tally.Result, cluster.Result)
// or a Document. A format the document's kind has no renderer for is an
// error naming the ones it has.
func Render(w io.Writer, format string, doc any, o Options) error {
	k, v, err := kinds.of(doc)
	if err != nil {
		return err
	}
	if !slices.Contains(Formats(k.name), format) {
		return fmt.Errorf("%s documents have no %s output; use %s", k.name, format, strings.Join(Formats(k.name), ", "))
	}
	switch format {
	case "json":
		return k.json(w, v)
	case "markdown":
		return Markdown(w, v)
	case "junit":
		return JUnit(w, v)
	case "github":
		return GitHub(w, v)
	}
	return k.text(w, v, o)
}
