package lualint_test

import (
	"os"
	"testing"

	"github.com/ratelimit-dev/ratelimit/limiter"
	"github.com/ratelimit-dev/ratelimit/lualint"
)

// TestLintEmbeddedScripts lints the sources the eval package really embeds
// (limiter.Scripts), not only the files beside it.
func TestLintEmbeddedScripts(t *testing.T) {
	scripts := limiter.Scripts()
	if len(scripts) == 0 {
		t.Fatal("limiter.Scripts() is empty")
	}
	for _, s := range scripts {
		rep := lualint.Lint("eval/"+s.File, []byte(s.Source))
		for _, f := range rep.Findings {
			t.Errorf("%s:%d: %s", f.File, f.Line, f.Message())
		}
		if rep.Calls == 0 {
			t.Errorf("%s: no redis.call seen", s.File)
		}
	}
}

// TestLintCatchesEvalSample lints the eval package's deliberately broken
// sample, which builds its keys from literals and ARGV.
func TestLintCatchesEvalSample(t *testing.T) {
	src, err := os.ReadFile("../eval/testdata/literal_key.lua")
	if err != nil {
		t.Skipf("eval sample not present: %v", err)
	}
	rep := lualint.Lint("literal_key.lua", src)
	if len(rep.Findings) != 2 {
		t.Fatalf("findings = %+v, want the INCR and GET of 'hits:' .. ARGV[1]", rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Expr != "'hits:' .. ARGV[1]" {
			t.Errorf("finding expr = %q", f.Expr)
		}
	}
}
