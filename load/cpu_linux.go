//go:build linux

package load

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// cpuSample is the machine's CPU time (busy and idle, in USER_HZ ticks
// from /proc/stat) and the process's own (user + system), at one moment.
type cpuSample struct {
	at          time.Time
	total, idle float64 // ticks
	own         time.Duration
	ok          bool
}

func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.own = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 6 || string(f[0]) != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user)
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseFloat(string(f[i]), 64)
		if err != nil {
			return s
		}
		s.total += v
		if i == 4 || i == 5 {
			s.idle += v
		}
	}
	s.ok = true
	return s
}

// userHZ is the unit of /proc/stat's times: fixed at 100 per second for
// user space on Linux, whatever the kernel's own tick.
const userHZ = 100

// saturatedBetween judges the interval from a to b (see cpuWatch).
func saturatedBetween(a, b cpuSample, procs int) bool {
	wall := b.at.Sub(a.at)
	own := b.own - a.own
	if wall <= 0 {
		return false
	}
	if float64(own) >= 0.9*float64(procs)*float64(wall) {
		return true // the generator uses all the processors it has
	}
	if !a.ok || !b.ok || b.total <= a.total {
		return false
	}
	idle := (b.idle - a.idle) / (b.total - a.total)
	machine := time.Duration((b.total - a.total) / userHZ * float64(time.Second))
	return idle < 0.10 && float64(own) >= 0.25*float64(machine)
}

// runtimeJudgesCPU: whether saturatedBetween judges the CPU here.
const runtimeJudgesCPU = true

func newCPUSample(at time.Time, total, idle float64, own time.Duration) cpuSample {
	return cpuSample{at: at, total: total, idle: idle, own: own, ok: true}
}
