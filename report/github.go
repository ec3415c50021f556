package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/race"
)

// GitHub renders a document as GitHub Actions workflow commands: an
// ::error annotation per failed check and a last plain line with the
// verdict. keyslot has its own (KeyslotGitHub, with files and lines); the
// other kinds annotate the failed testcases of their JUnit suite, so both
// outputs always agree on what failed.
func GitHub(w io.Writer, doc any) error {
	kind, v, err := docKind(doc)
	if err != nil {
		return err
	}
	var s junitSuite
	switch d := v.(type) {
	case cluster.Result:
		return KeyslotGitHub(w, d)
	case eval.Result:
		s = evalSuite(d)
	case eval.SimResult:
		s = simulateSuite(d)
	case eval.Catalog:
		s = scriptsSuite(d)
	case race.Result:
		s = raceSuite(d)
	case *load.Result:
		s = loadSuite(d)
	default:
		return fmt.Errorf("report: no github renderer for %s", kind)
	}
	var b strings.Builder
	var failed []string
	for _, c := range s.Cases {
		f := c.Failure
		if f == nil {
			f = c.Error
		}
		if f == nil {
			continue
		}
		failed = append(failed, Printable(f.Message))
		fmt.Fprintf(&b, "::error title=%s::%s\n", ksGHProp(kind+": "+c.Name), ksGHData(f.Message))
	}
	switch {
	case len(s.Cases) == 0:
		fmt.Fprintf(&b, "%s: no checks\n", kind)
	case len(failed) == 0:
		fmt.Fprintf(&b, "%s: PASS (%s)\n", kind, countNoun(len(s.Cases), "check", "checks"))
	default:
		fmt.Fprintf(&b, "%s: FAIL: %s\n", kind, strings.Join(failed, "; "))
	}
	_, err = io.WriteString(w, b.String())
	return err
}
