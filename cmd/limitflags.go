package cmd

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ratelimit-dev/ratelimit/exitcode"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// flagNamed spells the parameters a limiter.ParamError names as the flags
// that set them (--capacity), keeping its exit code; other errors pass.
func flagNamed(err error) error {
	var pe *limiter.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	return exitcode.Usagef("%s", pe.Named(func(p string) string { return "--" + p }))
}

// checkAlgoFlags rejects a limiter flag given on the command line (changed)
// that algo does not read, such as --capacity with sliding-window; eval and
// serve share it.
func checkAlgoFlags(algo limiter.Algo, changed map[string]bool) error {
	uses := algo.Flags()
	for _, n := range limiter.ParamWords {
		if changed[n] && !slices.Contains(uses, n) {
			return exitcode.Usagef("--%s does not apply to %s; it uses --%s", n, algo, strings.Join(uses, " and --"))
		}
	}
	return nil
}

// aliasFlag lets alias spell the flag name on fs (kept out of --help), on
// top of any normalization fs already has: "--for" for "--duration".
func aliasFlag(fs *pflag.FlagSet, alias, name string) {
	prev := fs.GetNormalizeFunc()
	fs.SetNormalizeFunc(func(f *pflag.FlagSet, n string) pflag.NormalizedName {
		if n == alias {
			n = name
		}
		return prev(f, n)
	})
}
