//go:build !linux

package load

import "time"

// cpuSample is the CPU time the machine and the process used, where the
// platform tells (Linux: cpu_linux.go); elsewhere the CPU is never judged
// saturated and VUs grow as iterations need them.
type cpuSample struct{ at time.Time }

func sampleCPU() cpuSample { return cpuSample{at: time.Now()} }

func saturatedBetween(cpuSample, cpuSample, int) bool { return false }

const runtimeJudgesCPU = false

func newCPUSample(at time.Time, _, _ float64, _ time.Duration) cpuSample { return cpuSample{at: at} }
