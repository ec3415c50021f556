package cmd

import (
	"slices"
	"strings"

	"github.com/ratelimit-dev/ratelimit/eval"
	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// checkAlgoFlags rejects a limiter flag given on the command line (changed)
// that algo does not read, such as --capacity with sliding-window; eval and
// serve share it.
func checkAlgoFlags(algo eval.Algo, changed map[string]bool) error {
	uses := algo.Flags()
	for _, n := range eval.LimitFlags {
		if changed[n] && !slices.Contains(uses, n) {
			return exitcode.Usagef("--%s does not apply to %s; it uses --%s", n, algo, strings.Join(uses, " and --"))
		}
	}
	return nil
}
