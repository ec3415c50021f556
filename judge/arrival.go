package judge

// Arrival is one sent request as the verdict sees it. Times are offsets
// from the run's start in nanoseconds; the start's wall clock is the
// replay's time base (StartMs), so a clock-aligned model sees absolute
// times.
type Arrival struct {
	Identity int
	DueNs    int64 // when the plan wanted it sent
	SendNs   int64 // when it was sent
	DoneNs   int64 // when its response (or error) ended
	Status   int   // 0: no status (a transport error): the outcome is unknown
}

// The one inclusion rule of every replay: every arrival sent is replayed,
// as the ideal limiter decides every request it is sent. One without a
// status may or may not have reached the real limiter, so each such
// arrival widens the tolerance by one (Tolerance.Unknown) and, where a
// fault is judged, counts as refused (it was not admitted).
