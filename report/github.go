package report

import (
	"fmt"
	"io"
	"strings"
)

// GitHub renders a document as GitHub Actions workflow commands: an
// ::error annotation per failed check, a ::warning per failed warning and
// a last plain line with the verdict. keyslot has its own (KeyslotGitHub,
// with files and lines); the other kinds annotate the testcases of their
// JUnit suite, so both outputs always agree on what failed.
func GitHub(w io.Writer, doc any) error {
	k, v, err := kinds.of(doc)
	if err != nil {
		return err
	}
	if k.github != nil {
		return k.github(w, v)
	}
	s := k.junit(v)
	var b strings.Builder
	var failed []string
	for _, c := range s.Cases {
		f := c.Failure
		if f == nil {
			f = c.Error
		}
		if f == nil {
			if ch := c.check; ch != nil && !ch.Pass && !ch.Skipped {
				fmt.Fprintf(&b, "::warning title=%s::%s\n", ksGHProp(k.name+": "+c.Name), ksGHData(ch.Message))
			}
			continue
		}
		failed = append(failed, Printable(f.Message))
		fmt.Fprintf(&b, "::error title=%s::%s\n", ksGHProp(k.name+": "+c.Name), ksGHData(f.Message))
	}
	switch {
	case len(s.Cases) == 0:
		fmt.Fprintf(&b, "%s: no checks\n", k.name)
	case len(failed) == 0:
		fmt.Fprintf(&b, "%s: PASS (%s)\n", k.name, countNoun(len(s.Cases), "check", "checks"))
	default:
		fmt.Fprintf(&b, "%s: FAIL: %s\n", k.name, strings.Join(failed, "; "))
	}
	_, err = io.WriteString(w, b.String())
	return err
}
