package eval

import (
	"strings"

	"github.com/ratelimit-dev/ratelimit/exitcode"
)

// ParseEvalArgs splits positional arguments in redis-cli --eval syntax,
// "KEY [KEY...] , ARG [ARG...]", into keys and args. The first argument
// that is exactly "," separates them (later ones are ordinary arguments, as
// in redis-cli); there may be no keys (", ARG") or no args ("KEY ,"). A
// missing separator is bad input: unlike redis-cli, which would silently
// take every word for a key, the command says how to write it.
func ParseEvalArgs(words []string) (keys, args []string, err error) {
	for i, w := range words {
		if w == "," {
			return append([]string{}, words[:i]...), append([]string{}, words[i+1:]...), nil
		}
	}
	for _, w := range words {
		if strings.Contains(w, ",") {
			return nil, nil, exitcode.Usagef("no separate ',' in %q: put spaces around the comma, as in redis-cli --eval: KEY [KEY...] , ARG [ARG...]", strings.Join(words, " "))
		}
	}
	if len(words) == 0 {
		return nil, nil, exitcode.Usagef("--script needs KEY [KEY...] , ARG [ARG...] after the file (write ', ARG' for no keys, 'KEY ,' for no arguments)")
	}
	return nil, nil, exitcode.Usagef("missing ' , ' between keys and arguments in %q: write KEY [KEY...] , ARG [ARG...] (or 'KEY ,' when there are no arguments)", strings.Join(words, " "))
}
