package cmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

// recipe is one journey of the README: the lines of the fenced block
// after a `<!-- recipe: NAME exit=N want="TEXT" -->` marker. TEXT is in
// the output of the recipe's commands, or, as "file:NAME", a file the
// recipe writes.
type recipe struct {
	name  string
	exit  int
	want  string
	lines []string
}

var recipeMarker = regexp.MustCompile(`^<!-- recipe: (\S+) exit=(\d+) want="([^"]+)" -->$`)

// readmeRecipes reads the recipes of the README at path.
func readmeRecipes(t *testing.T, path string) []recipe {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []recipe
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		m := recipeMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README line %d: recipe %s is not followed by a fenced block", i+1, m[1])
		}
		code, _ := strconv.Atoi(m[2])
		r := recipe{name: m[1], exit: code, want: m[3]}
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			if l := strings.TrimSpace(lines[i]); l != "" {
				r.lines = append(r.lines, l)
			}
		}
		out = append(out, r)
	}
	return out
}

// trailingComment is a shell comment after a command: two spaces or more,
// then '#'.
var trailingComment = regexp.MustCompile(`\s{2,}#.*$`)

var (
	servePrinted   = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	sandboxPrinted = regexp.MustCompile(`^(redis://127\.0\.0\.1:\d+)`)
	vegetaLine     = regexp.MustCompile(`^echo "GET (\S+)" \| vegeta attack -rate (\d+) -duration (\S+) > (\S+)$`)
)

// TestReadmeRecipes runs each journey of the README as written, from a
// temporary directory holding the built binary as ./ratelimit: a line
// ending in '&' starts its server (serve on port 0, sandbox on free
// ports) as a child of the test, and the address it prints replaces
// http://127.0.0.1:PORT and redis://127.0.0.1:REDISPORT in the lines
// after it; nothing else is changed. The last line of a recipe must exit
// with the code its marker names, every other line with 0. vegeta is not
// installed here: its line is played by recording the same plan against
// the same URL and writing what `vegeta attack` writes (package cmd's
// report --from tests do the same).
func TestReadmeRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the README's journeys")
	}
	recipes := readmeRecipes(t, filepath.Join("..", "README.md"))
	want := []string{"script", "keyslot", "load", "probe", "check", "fault", "recording"}
	var got []string
	for _, r := range recipes {
		got = append(got, r.name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("README recipes %v, want %v", got, want)
	}
	bin := filepath.Join(t.TempDir(), "ratelimit")
	build := exec.Command("go", "build", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			if r.name == "fault" {
				redistest.Require(t)
			}
			dir := t.TempDir()
			if err := os.Link(bin, filepath.Join(dir, "ratelimit")); err != nil {
				data, rerr := os.ReadFile(bin)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if err := os.WriteFile(filepath.Join(dir, "ratelimit"), data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			runRecipe(t, dir, r)
		})
	}
}

func runRecipe(t *testing.T, dir string, r recipe) {
	t.Helper()
	urls := map[string]string{}
	var all bytes.Buffer
	defer func() {
		if t.Failed() {
			return
		}
		if name, ok := strings.CutPrefix(r.want, "file:"); ok {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
				t.Errorf("recipe %s wrote no %s: %v", r.name, name, err)
			}
		} else if !strings.Contains(all.String(), r.want) {
			t.Errorf("recipe %s: output lacks %q:\n%s", r.name, r.want, all.String())
		}
	}()
	for i, line := range r.lines {
		line = trailingComment.ReplaceAllString(line, "")
		if u, ok := urls["PORT"]; ok {
			line = strings.ReplaceAll(line, "http://127.0.0.1:PORT", u)
		}
		if u, ok := urls["REDISPORT"]; ok {
			line = strings.ReplaceAll(line, "redis://127.0.0.1:REDISPORT", u)
		}
		if strings.Contains(line, "PORT") {
			t.Fatalf("line %q names a PORT no server before it printed", line)
		}
		if bg, ok := strings.CutSuffix(line, "&"); ok {
			startServer(t, dir, strings.TrimSpace(bg), urls)
			continue
		}
		if m := vegetaLine.FindStringSubmatch(line); m != nil {
			playVegeta(t, dir, m[1], m[2], m[3], m[4])
			continue
		}
		want := 0
		if i == len(r.lines)-1 {
			want = r.exit
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", line)
		cmd.Dir = dir
		cmd.Env = recipeEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		all.Write(out.Bytes())
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if code != want {
			t.Fatalf("%s\nexit %d, want %d\n%s", line, code, want, out.String())
		}
		t.Logf("%s: exit %d", line, code)
	}
}

// startServer starts line (a ./ratelimit serve or sandbox command) as a
// child, waits for the address it prints and records it in urls; the
// child is stopped with SIGINT at cleanup.
func startServer(t *testing.T, dir, line string, urls map[string]string) {
	t.Helper()
	args, err := splitWords(line)
	if err != nil || len(args) < 2 || args[0] != "./ratelimit" {
		t.Fatalf("background line %q: want ./ratelimit serve|sandbox ...", line)
	}
	cmd := exec.Command(filepath.Join(dir, "ratelimit"), args[1:]...)
	cmd.Dir = dir
	cmd.Env = recipeEnv()
	var stream io.ReadCloser
	var re *regexp.Regexp
	var key string
	switch args[1] {
	case "serve":
		stream, err = cmd.StderrPipe()
		re, key = servePrinted, "PORT"
	case "sandbox":
		stream, err = cmd.StdoutPipe()
		re, key = sandboxPrinted, "REDISPORT"
	default:
		t.Fatalf("background line %q: only serve and sandbox are servers", line)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		wg.Wait()
	})
	select {
	case u := <-found:
		urls[key] = u
	case <-time.After(90 * time.Second):
		t.Fatalf("%s printed no address in 90s", line)
	}
}

// playVegeta stands in for `echo "GET URL" | vegeta attack -rate N
// -duration D > FILE`: the same plan against the same URL, written as
// vegeta's gob.
func playVegeta(t *testing.T, dir, url, rate, duration, file string) {
	t.Helper()
	r, err := strconv.Atoi(rate)
	if err != nil {
		t.Fatal(err)
	}
	d, err := time.ParseDuration(duration)
	if err != nil {
		t.Fatal(err)
	}
	sent := recordRun(t, url, float64(r), int(d.Seconds()*float64(r)))
	p := writeVegetaRecording(t, sent, url, "gob")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recipeEnv is the test's environment without the variables that would
// point a recipe elsewhere than it says.
func recipeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "RATELIMIT_TARGET=") {
			env = append(env, kv)
		}
	}
	return append(env, "NO_COLOR=1")
}

// splitWords splits a command line as the shell would for the simple
// lines of the README: words separated by blanks, single or double quotes
// kept together.
func splitWords(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, strconv.ErrSyntax
	}
	if in {
		out = append(out, b.String())
	}
	return out, nil
}

// TestHelpExamplesFirst: every command's --help shows its examples right
// after the one-line summary, before the long description (issue 25: they
// started 27 to 79 lines down).
func TestHelpExamplesFirst(t *testing.T) {
	for _, c := range NewRootCmd(newTestFactory(t).Factory).Commands() {
		if c.Example == "" || c.Hidden {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			tf := newTestFactory(t)
			tf.execute(t, c.Name(), "--help")
			lines := strings.Split(tf.Out.String(), "\n")
			if len(lines) < 3 || lines[0] != c.Short || lines[2] != "Examples:" {
				t.Fatalf("%s --help begins %q, want the summary, a blank line and Examples:", c.Name(), lines[:min(3, len(lines))])
			}
			help := tf.Out.String()
			if strings.Count(help, "Examples:") != 1 {
				t.Errorf("%s --help shows Examples: %d times, want once", c.Name(), strings.Count(help, "Examples:"))
			}
			if c.Long != "" {
				first, _, _ := strings.Cut(c.Long, "\n")
				if strings.Index(help, first) < strings.Index(help, strings.TrimSpace(strings.SplitN(c.Example, "\n", 2)[0])) {
					t.Errorf("%s --help shows its description before its examples", c.Name())
				}
			}
		})
	}
}
