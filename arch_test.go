package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ratelimit-dev/ratelimit"

// domains are the packages that each do one command's job. They share
// code only through the leaf packages (limiter, header, rate, redisconn,
// doc, fault, sandbox, the servers this process owns, the judge and the
// tally every producer of a run feeds, and the small helpers exitcode,
// secret, userfile, version, words, stats), never by importing one
// another (a package under a domain's folder, such as race/racedoc, is
// that domain's); report renders their results and cmd wires them.
var domains = []string{"eval", "race", "load", "cluster", "serve", "probe", "failover", "suite"}

// cliOnly are the modules only cmd may import: the command line and the
// terminal's progress bars.
var cliOnly = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/vbauerster/mpb"}

// redisModules talk to Redis: the client, and through redisconn the
// embedded server and its Lua interpreter.
var redisModules = []string{"github.com/redis/go-redis", "github.com/alicebob/miniredis", "github.com/yuin/gopher-lua"}

// redisFree depend on none of redisModules, however indirectly: drawing a
// document, generating HTTP load and serving HTTP need no Redis client, so
// each kind's document lives in a package without one (cluster, and the
// doc packages of eval, race and failover), apart from the code that fills
// it in.
var redisFree = []string{"report", "load", "serve", "cluster", "suite", "eval/evaldoc", "race/racedoc", "failover/failoverdoc"}

// luaParser is the module only lualint imports: the Lua key lint reads
// scripts, cmd runs it, and cluster and report take its reports
// (lualint/lint), never the parser.
const luaParser = "github.com/yuin/gopher-lua"

// TestPackageGraph holds the package rules docs/ARCHITECTURE.md states,
// on the graph go list reports (scripts/depgraph prints it).
func TestPackageGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		pkg := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/")
		imports, deps := strings.Fields(parts[1]), strings.Fields(parts[2])
		for _, imp := range imports {
			if (imp == luaParser || strings.HasPrefix(imp, luaParser+"/")) && pkg != "lualint" {
				t.Errorf("%s imports %s: only lualint reads Lua; take its reports from lualint/lint", pkg, imp)
			}
			own, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if own == "lualint" && pkg != "cmd" {
				t.Errorf("%s imports lualint: only cmd runs the Lua lint, others take its reports (lualint/lint)", pkg)
			}
			top, _, _ := strings.Cut(own, "/")
			if home, _, _ := strings.Cut(pkg, "/"); slices.Contains(domains, home) && slices.Contains(domains, top) && top != home {
				t.Errorf("domain package %s imports domain package %s: share through limiter, header, rate, redisconn or doc", pkg, own)
			}
			if top == "report" && pkg != "cmd" && !strings.HasPrefix(pkg, "report") {
				t.Errorf("%s imports report: only cmd renders", pkg)
			}
		}
		if slices.Contains(redisFree, pkg) {
			for _, m := range redisModules {
				if i := slices.IndexFunc(deps, func(d string) bool { return d == m || strings.HasPrefix(d, m+"/") }); i >= 0 {
					t.Errorf("%s depends on %s: keep Redis code out of it and of what it imports (a kind's document goes in its Redis-free package, e.g. race/racedoc)", pkg, deps[i])
				}
			}
		}
		if pkg == "cmd" || pkg == "" {
			continue // cmd wires the CLI; main only calls cmd
		}
		for _, d := range deps {
			for _, m := range cliOnly {
				if d == m || strings.HasPrefix(d, m+"/") {
					t.Errorf("%s depends on %s: only cmd may use the command line and progress bars", pkg, d)
				}
			}
		}
	}
}
