package evaldoc

import (
	"github.com/ratelimit-dev/ratelimit/doc"
	"github.com/ratelimit-dev/ratelimit/limiter"
)

// Catalog is the document of `ratelimit scripts` (kind "scripts").
type Catalog struct {
	doc.Header
	Scripts []CatalogEntry `json:"scripts"`
	// Checks is always empty: a catalogue checks nothing.
	Checks []Check `json:"checks"`
}

// CatalogEntry describes one embedded script.
type CatalogEntry struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	SHA1    string `json:"sha1"`
	Summary string `json:"summary"`
	Source  string `json:"source,omitempty"`
	Path    string `json:"path,omitempty"` // where --export wrote it
}

// NewCatalog lists scripts, with their source when withSource is set.
func NewCatalog(scripts []limiter.Script, withSource bool) Catalog {
	c := Catalog{Header: doc.Header{Kind: CatalogKind, Version: CatalogVersion}, Scripts: []CatalogEntry{}, Checks: []Check{}}
	for _, s := range scripts {
		e := CatalogEntry{Name: s.Name, File: s.File, SHA1: s.SHA1(), Summary: s.Summary}
		if withSource {
			e.Source = s.Source
		}
		c.Scripts = append(c.Scripts, e)
	}
	return c
}
