package eval

import (
	"github.com/ratelimit-dev/ratelimit/eval/evaldoc"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// The documents eval fills in are defined in package evaldoc, which
// imports no Redis client, so report can draw them; these names are the
// same types and values under eval's name.
type (
	Result       = evaldoc.Result
	ParamsDoc    = evaldoc.ParamsDoc
	ScriptDoc    = evaldoc.ScriptDoc
	Call         = evaldoc.Call
	Summary      = evaldoc.Summary
	TTLCheck     = evaldoc.TTLCheck
	NoTTLKey     = evaldoc.NoTTLKey
	Check        = evaldoc.Check
	SimResult    = evaldoc.SimResult
	Catalog      = evaldoc.Catalog
	CatalogEntry = evaldoc.CatalogEntry
)

// Kinds, versions and check ids of the documents (see evaldoc).
const (
	Kind           = evaldoc.Kind
	Version        = evaldoc.Version
	SimKind        = evaldoc.SimKind
	SimVersion     = evaldoc.SimVersion
	CatalogKind    = evaldoc.CatalogKind
	CatalogVersion = evaldoc.CatalogVersion

	CheckReplyShape = evaldoc.CheckReplyShape
	CheckTTL        = evaldoc.CheckTTL
	CheckModel      = evaldoc.CheckModel
	CheckExpect     = evaldoc.CheckExpect
)

// NewCatalog lists scripts, with their source when withSource is set.
func NewCatalog(scripts []limiter.Script, withSource bool) Catalog {
	return evaldoc.NewCatalog(scripts, withSource)
}
