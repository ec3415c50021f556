package race

import (
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/race/racedoc"
)

// The race document is defined in package racedoc, which imports no Redis
// client, so report can draw it; these names are the same types and
// values under race's name.
type (
	Result   = racedoc.Result
	Strategy = racedoc.Strategy
)

// Kind and Version identify a race result document.
const (
	Kind    = racedoc.Kind
	Version = racedoc.Version
)

// The built-in strategies, and User, the user's own script.
const (
	Naive  = racedoc.Naive
	Multi  = racedoc.Multi
	Watch  = racedoc.Watch
	Incr   = racedoc.Incr
	Script = racedoc.Script
	User   = racedoc.User
)

// Checks returns the checks of a result, one per strategy in order
// (racedoc.Checks).
func Checks(r Result) []doc.Check { return racedoc.Checks(r) }

// ExactExpected reports whether strategy name promises to admit exactly
// min(limit, concurrency) requests against a fresh key
// (racedoc.ExactExpected).
func ExactExpected(name string) bool { return racedoc.ExactExpected(name) }
