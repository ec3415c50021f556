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
// doc, fault, sandbox, the servers this process owns, and the small
// helpers exitcode, secret, userfile, version), never by importing one
// another; report renders their results and cmd wires them.
var domains = []string{"eval", "race", "load", "cluster", "serve", "probe", "failover"}

// cliOnly are the modules only cmd may import: the command line and the
// terminal's progress bars.
var cliOnly = []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "github.com/vbauerster/mpb"}

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
			if slices.Contains(domains, pkg) && slices.Contains(domains, top) && top != pkg {
				t.Errorf("domain package %s imports domain package %s: share through limiter, header, rate, redisconn or doc", pkg, own)
			}
			if top == "report" && pkg != "cmd" && !strings.HasPrefix(pkg, "report") {
				t.Errorf("%s imports report: only cmd renders", pkg)
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
