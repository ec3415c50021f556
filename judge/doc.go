// Package judge is the one place a run's numbers become a verdict: what a
// response says about the limiter (Allowed, Rule), the model a run is
// judged against (Expectation, from limiter's registry), the one replay of
// the arrivals through that model (Stream; Judge is its batch wrapper),
// the one tolerance with its named terms (Tolerance), the windows of a run
// with faults (JudgeFaults) and the k6-style thresholds. The load
// executor, the recordings of other tools and the merge of segments all
// feed it arrivals; none of them judges on its own.
//
// It is pure: it imports no network or Redis code and never reads a clock.
package judge
