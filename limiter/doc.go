// Package limiter is what every command shares about the limiter
// algorithms: one registry entry per algorithm (registry.go, and one file
// per algorithm beside its .lua script) holding its parameters and their
// validation, its script and the script's argument builder and reply
// decoding, its pure Go model (limiter/model), its advertised policy, its
// words and spec syntax, the flags that set it and the minimal ACL its
// script needs. A new algorithm is one new entry: nothing else switches on
// the algorithm.
//
// The package imports no Redis client: running a script on a server is
// limiter/redislimit's job, so load, report and serve, which only reason
// about limiters, do not depend on go-redis.
package limiter
