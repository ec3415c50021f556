package redisconn

import "time"

// WithDefault points the default-resolution probe at another URL for tests.
func WithDefault(o Options, url string, probe time.Duration) Options {
	o.DefaultURL = url
	o.probeTimeout = probe
	return o
}

// Showable reports whether an error may name a query option.
var Showable = showable
