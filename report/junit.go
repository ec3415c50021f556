package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"

	"github.com/ratelimit-dev/ratelimit/cluster"
	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/load"
	"github.com/ratelimit-dev/ratelimit/race"
)

// The JUnit XML that CI systems read (Jenkins, GitLab, GitHub test
// reporters): one <testsuites> holding one <testsuite name="ratelimit
// <command>"> per document and one <testcase> per check; a failed check
// carries <failure message="..."> with details as text. Only elements and
// attributes of the common schema are used.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
	timeS     float64
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// junitTime formats seconds as JUnit's decimal time attribute.
func junitTime(s float64) string { return strconv.FormatFloat(max(s, 0), 'f', 3, 64) }

// newCase is a passing testcase.
func newCase(classname, name string, timeS float64) junitCase {
	return junitCase{Classname: classname, Name: name, Time: junitTime(timeS)}
}

func (c *junitCase) fail(typ, message, text string) {
	c.Failure = &junitFailure{Type: typ, Message: message, Text: text}
}

// JUnit writes documents as one JUnit report: a <testsuite> per document.
// Every kind has one: a kind without checks (scripts) is an empty suite.
func JUnit(w io.Writer, docs ...any) error {
	var suites []junitSuite
	for _, d := range docs {
		kind, v, err := docKind(d)
		if err != nil {
			return err
		}
		var s junitSuite
		switch res := v.(type) {
		case race.Result:
			s = raceSuite(res)
		case *load.Result:
			s = loadSuite(res)
		case cluster.Result:
			s = keyslotSuite(res)
		case eval.Result:
			s = evalSuite(res)
		case eval.SimResult:
			s = simulateSuite(res)
		case eval.Catalog:
			s = scriptsSuite(res)
		default:
			return fmt.Errorf("report: no junit renderer for %s", kind)
		}
		suites = append(suites, s)
	}
	return writeJUnit(w, suites)
}

func writeJUnit(w io.Writer, suites []junitSuite) error {
	doc := junitSuites{Name: "ratelimit", Suites: suites}
	var total float64
	for i := range doc.Suites {
		s := &doc.Suites[i]
		if s.Cases == nil {
			s.Cases = []junitCase{}
		}
		s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
		for _, c := range s.Cases {
			switch {
			case c.Failure != nil:
				s.Failures++
			case c.Error != nil:
				s.Errors++
			case c.Skipped != nil:
				s.Skipped++
			}
		}
		s.Time = junitTime(s.timeS)
		total += s.timeS
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	doc.Time = junitTime(total)
	// XML 1.0 has no way to write most control bytes (encoding/xml would
	// turn them into U+FFFD): show them as printable does instead.
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Name = Printable(s.Name)
		for k := range s.Cases {
			c := &s.Cases[k]
			c.Name, c.Classname, c.SystemOut = Printable(c.Name), Printable(c.Classname), printableLines(c.SystemOut)
			for _, f := range []*junitFailure{c.Failure, c.Error} {
				if f != nil {
					f.Message, f.Type, f.Text = Printable(f.Message), Printable(f.Type), printableLines(f.Text)
				}
			}
			if c.Skipped != nil {
				c.Skipped.Message = Printable(c.Skipped.Message)
			}
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
