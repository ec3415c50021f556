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
		// issue 32: xargs dropped the unfinished word and ran the rest (exit 0)
		{"unmatched quote", `keyslot --same-slot 'rl:{user:42}:minute' rl:{user:42}:day 'rl:user:42:week`, 2, "", ""},
		{"unmatched double quote", `keyslot --same-slot "rl:{user:42}:minute rl:{user:42}:day`, 2, "", ""},
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

// TestInstallVersionInput (issue 26): action/install.sh takes only
// "source", "latest" or a release version; anything else (a path that
// would leave the project's releases) is refused with one line and a
// non-zero exit before any network access. curl, wget and go are fakes
// that record their arguments and fail, and the repository URL is
// unroutable: the test never reaches the network.
func TestInstallVersionInput(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("action", "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	fakes := t.TempDir()
	callLog := filepath.Join(fakes, "calls.log")
	fake := `#!/bin/sh
echo "$(basename "$0") $*" >> "` + callLog + `"
case "$(basename "$0") $*" in
curl*url_effective*) printf '%s' "$FAKE_LATEST"; exit 0 ;;
esac
exit 1
`
	for _, name := range []string{"curl", "wget", "go"} {
		if err := os.WriteFile(filepath.Join(fakes, name), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const repo = "http://127.0.0.1:9/ratelimit-dev/ratelimit"
	run := func(t *testing.T, version, latest string) (code int, stderr string, calls []string, binMade bool) {
		t.Helper()
		work := t.TempDir()
		_ = os.Remove(callLog)
		cmd := exec.Command("bash", script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
			"INPUT_VERSION="+version, "GH_REPO_URL="+repo, "RUNNER_TEMP="+work, "GITHUB_PATH="+filepath.Join(work, "path"),
			"FAKE_LATEST="+latest, "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9")
		var errb strings.Builder
		cmd.Stderr = &errb
		_ = cmd.Run()
		b, _ := os.ReadFile(callLog)
		if s := strings.TrimSpace(string(b)); s != "" {
			calls = strings.Split(s, "\n")
		}
		_, statErr := os.Stat(filepath.Join(work, "ratelimit-bin"))
		return cmd.ProcessState.ExitCode(), errb.String(), calls, statErr == nil
	}
	for _, bad := range []string{
		"1.0.0/../../../../evil/repo/releases/download/v1",
		"v1.0.0/../../x", "../../evil", "1.0", "v1.2.3.4", "1.2.3-", "1.2.3-rc/1", "1.2.3-rc 1", "1.2.3\n/evil",
		"vv1.2.3", "01.2.3", "1.2.3+build", "https://evil.example/x", "", " ",
	} {
		if bad == "" {
			continue // unset means source (go install of the action's ref)
		}
		t.Run("refuses "+strconv.Quote(bad), func(t *testing.T) {
			code, stderr, calls, binMade := run(t, bad, "")
			if code == 0 {
				t.Errorf("exit 0, want a refusal")
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "is not a release version") {
				t.Errorf("stderr %q, want one line saying it is not a release version", stderr)
			}
			if len(calls) > 0 || binMade {
				t.Errorf("ran %q (bin dir made: %v) before refusing, want nothing", calls, binMade)
			}
		})
	}
	m, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	sys, err := exec.Command("uname", "-s").Output()
	if err != nil {
		t.Fatal(err)
	}
	goarch := map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[strings.TrimSpace(string(m))]
	goos := map[string]string{"Linux": "linux", "Darwin": "darwin"}[strings.TrimSpace(string(sys))]
	if goarch == "" || goos == "" {
		t.Skipf("no release for %s %s", sys, m) // the refusals above ran
	}
	platform := goos + "_" + goarch
	for _, tt := range []struct{ version, latest, want string }{
		{"v1.2.3", "", repo + "/releases/download/v1.2.3/ratelimit_1.2.3_" + platform + ".tar.gz"},
		{"1.2.3-rc.1", "", repo + "/releases/download/v1.2.3-rc.1/ratelimit_1.2.3-rc.1_" + platform + ".tar.gz"},
		{"latest", repo + "/releases/tag/v2.0.1", repo + "/releases/download/v2.0.1/ratelimit_2.0.1_" + platform + ".tar.gz"},
		{"latest", repo + "/releases/tag/v1.0.0/../../../evil", ""},
		{"latest", "https://evil.example/", ""},
	} {
		t.Run(tt.version+" "+tt.latest, func(t *testing.T) {
			code, stderr, calls, _ := run(t, tt.version, tt.latest)
			if code == 0 {
				t.Fatalf("exit 0 with a curl that fails; stderr %q", stderr)
			}
			var fetched []string
			for _, c := range calls {
				if !strings.Contains(c, "url_effective") {
					fetched = append(fetched, c)
				}
			}
			if tt.want == "" {
				if len(fetched) > 0 || !strings.Contains(stderr, "latest release could not be read") {
					t.Errorf("fetched %q, stderr %q; want a refusal of the latest tag before any download", fetched, stderr)
				}
				return
			}
			if len(fetched) != 1 || !strings.HasSuffix(fetched[0], " "+tt.want) {
				t.Errorf("fetched %q, want only %s", fetched, tt.want)
			}
		})
	}
}
