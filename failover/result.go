package failover

import "github.com/ratelimit-dev/ratelimit/failover/failoverdoc"

// The failover document is defined in package failoverdoc, which imports
// no Redis client, so report can draw it; these names are the same types
// and values under failover's name.
type (
	Result     = failoverdoc.Result
	Params     = failoverdoc.Params
	Variant    = failoverdoc.Variant
	Trial      = failoverdoc.Trial
	ErrorCount = failoverdoc.ErrorCount
	Recovery   = failoverdoc.Recovery
	Stats      = failoverdoc.Stats
	Tradeoff   = failoverdoc.Tradeoff
)

// Kind and Version identify the failover document.
const (
	Kind    = failoverdoc.Kind
	Version = failoverdoc.Version
)

// Variant names.
const (
	VariantNoWait = failoverdoc.VariantNoWait
	VariantWait   = failoverdoc.VariantWait
)

// Check ids.
const (
	CheckMaxExtra     = failoverdoc.CheckMaxExtra
	CheckMaxExtraWait = failoverdoc.CheckMaxExtraWait
	CheckClusterOK    = failoverdoc.CheckClusterOK
	CheckKeysDeleted  = failoverdoc.CheckKeysDeleted
)

// ExtraSaved is failoverdoc.ExtraSaved: the extra admissions WAIT saved,
// at most the no-wait median.
func ExtraSaved(noWait, wait float64) float64 { return failoverdoc.ExtraSaved(noWait, wait) }
