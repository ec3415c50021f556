package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ratelimit-dev/ratelimit/doc"
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
	// check is the check the testcase shows, when it shows one: a failed
	// warning becomes a ::warning annotation.
	check     *doc.Check
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

// checkCase is the testcase of one check: a failure of type typ when a
// check that counts failed, skipped when it did not apply, else passed
// with the message (a failed warning says so first) and detail as output.
func checkCase(classname, name string, ch doc.Check, typ, detail string) junitCase {
	c := newCase(classname, name, 0)
	c.check = &ch
	switch {
	case ch.Skipped:
		c.Skipped = &junitSkipped{Message: ch.Message}
	case !ch.Pass && ch.Counts():
		c.fail(typ, ch.Message, detail)
	case !ch.Pass:
		c.SystemOut = "warning: " + ch.Message + "\n" + afterMessage(ch.Message, detail)
	default:
		c.SystemOut = ch.Message + "\n" + afterMessage(ch.Message, detail)
	}
	return c
}

// afterMessage is detail without its first line when that line is the
// message: a testcase's output says each thing once.
func afterMessage(message, detail string) string {
	if message == "" {
		return detail
	}
	return strings.TrimPrefix(detail, message+"\n")
}

// JUnit writes documents as one JUnit report: a <testsuite> per document
// (a suite document: one per entry). Every kind has one: a kind without
// checks (scripts) is an empty suite.
func JUnit(w io.Writer, docs ...any) error {
	var suites []junitSuite
	for _, d := range docs {
		k, v, err := kinds.of(d)
		if err != nil {
			return err
		}
		suites = append(suites, k.suites(v)...)
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
