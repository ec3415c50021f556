// Package limiter is what every command shares about the limiters under
// test: the four embedded Lua scripts (token bucket, sliding-window log,
// fixed window, GCRA) with their go:embed loader, their parameters
// (Params, Algo), the decision a call returns (Decision, Policy), the
// atomic call itself (Limiter.Allow) and, in limiter/model, the pure Go
// twin of each script. eval, race, load and serve import it; it imports no
// other domain package.
package limiter
