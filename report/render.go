package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/race"
)

// Render writes one result document in format: "text", "json",
// "markdown", "junit" or "github" (every kind has each; HTML writes the
// page of several). doc is a result value
// (eval.Result, eval.SimResult, eval.Catalog, race.Result, load.Result or
// *load.Result, cluster.Result) or a Document. A format the document's
// kind has no renderer for is an error naming the ones it has.
func Render(w io.Writer, format string, doc any, o Options) error {
	kind, v, err := docKind(doc)
	if err != nil {
		return err
	}
	if !slices.Contains(Formats(kind), format) {
		return fmt.Errorf("%s documents have no %s output; use %s", kind, format, strings.Join(Formats(kind), ", "))
	}
	switch format {
	case "json":
		if res, ok := v.(cluster.Result); ok {
			return KeyslotJSON(w, res)
		}
		return JSON(w, v)
	case "markdown":
		return Markdown(w, v)
	case "junit":
		return JUnit(w, v)
	case "github":
		return GitHub(w, v)
	}
	switch d := v.(type) {
	case eval.Result:
		return EvalText(w, d, o)
	case eval.SimResult:
		return EvalSimulateText(w, d, o)
	case eval.Catalog:
		return EvalScriptsText(w, d, o)
	case race.Result:
		return RaceText(w, d, o)
	case *load.Result:
		return LoadText(w, d, o)
	case cluster.Result:
		return KeyslotText(w, d, o)
	}
	return fmt.Errorf("report: no text renderer for %s", kind)
}
