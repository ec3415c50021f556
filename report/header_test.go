package report

import (
	"time"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// testTool and testStart pin the envelope of the documents built here.
var (
	testTool  = &doc.Tool{Name: "ratelimit", Version: "v0.9.0", Revision: "4ebc63f0a1b2c3d4e5f60718293a4b5c6d7e8f90"}
	testStart = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// testHeader is the envelope of a document of kind written by `ratelimit
// KIND args...` against s (nil: no server).
func testHeader(kind string, version int, s *doc.Server, args ...string) doc.Header {
	return doc.Header{Kind: kind, Version: version, Tool: testTool, StartedAt: testStart, Server: s,
		Command: append([]string{"ratelimit", kind}, args...)}
}

// srv is a pointer to a copy of s.
func srv(s doc.Server) *doc.Server { return &s }
