package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestActionScript runs the shell of action.yml's run step (action/run.sh)
// as a runner would, with a fake GITHUB_STEP_SUMMARY and GITHUB_OUTPUT and
// the binary built from this tree: the Markdown lands in the summary, the
// JUnit parses and agrees, and the step's exit code is the command's
// (0 for keys that share a slot, 1 when they do not, 2 for bad input).
func TestActionScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ratelimit")
	script, err := filepath.Abs(filepath.Join("action", "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		name, command string
		code          int
		summary       string // in the job summary
		failures      string // the JUnit suite's failures attribute
	}{
		{"same slot", `keyslot --same-slot 'rl:{user:42}:minute' "rl:{user:42}:day"`, 0, "PASS", "0"},
		{"crossslot", `keyslot --same-slot rl:user:42:minute rl:user:42:day`, 1, "FAIL", "1"},
		{"bad input", `keyslot --template 'rl:{t:%d}' --range 9-1`, 2, "", ""},
		{"no expansion", `keyslot --same-slot '$(touch pwned)' "$HOME"`, 1, "", "1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			summary, output, junit := filepath.Join(work, "summary.md"), filepath.Join(work, "output"), filepath.Join(work, "junit.xml")
			cmd := exec.Command("bash", script)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "RATELIMIT="+bin, "RUNNER_TEMP="+work,
				"INPUT_COMMAND="+tt.command, "INPUT_JUNIT="+junit, "INPUT_SUMMARY=true",
				"GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output)
			out, _ := cmd.CombinedOutput()
			if got := cmd.ProcessState.ExitCode(); got != tt.code {
				t.Fatalf("exit %d, want %d\n%s", got, tt.code, out)
			}
			if _, err := os.Stat(filepath.Join(work, "pwned")); err == nil {
				t.Fatal("the command input was expanded by the shell")
			}
			o, _ := os.ReadFile(output)
			if !strings.Contains(string(o), "exit-code="+strconv.Itoa(tt.code)) {
				t.Errorf("GITHUB_OUTPUT %q", o)
			}
			if tt.failures == "" {
				if b, _ := os.ReadFile(summary); len(b) > 0 {
					t.Errorf("a summary for a run that wrote no document:\n%s", b)
				}
				return
			}
			s, _ := os.ReadFile(summary)
			if tt.summary != "" && !strings.Contains(string(s), tt.summary) {
				t.Errorf("summary does not say %s:\n%s", tt.summary, s)
			}
			x, err := os.ReadFile(junit)
			if err != nil {
				t.Fatal(err)
			}
			var suites struct {
				Suites []struct {
					Failures string `xml:"failures,attr"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(x, &suites); err != nil || len(suites.Suites) == 0 {
				t.Fatalf("junit %v:\n%s", err, x)
			}
			if f := suites.Suites[0].Failures; f != tt.failures {
				t.Errorf("junit failures %s, want %s:\n%s", f, tt.failures, x)
			}
		})
	}
}
