#!/usr/bin/env bash
# bench/load.sh: the highest constant arrival rate at which `ratelimit load`
# runs clean against a trivial loopback target, with each of its HTTP
# clients (--http-client lean and std), next to its peers on the same
# target in the same run: wrk2 (open loop, constant throughput, latency
# corrected for coordinated omission: the true peer), vegeta, and wrk's
# closed loop (a ceiling, not a peer). Then `ratelimit load` once more at
# 1.5 times its clean rate: how much of the plan it still sends, what it
# dropped and why, and how its latency from due grew.
#
# Clean means: every planned request completed with 200, nothing dropped,
# and p99 latency under 50 ms. For ratelimit load that is the latency from
# the DUE time (free of coordinated omission), and wrk2's is corrected the
# same way (from when each request was meant to be sent); vegeta only
# reports latency from the send, which flatters it. Vegeta has no notion of
# dropped iterations: a vegeta run is clean when it made rate x duration
# requests. wrk2 staggers its connections' starts 5 ms apart within a
# thread, so a run of D plans R x (D - 2.5 ms x (connections per thread -
# 1)) requests. It never drops one (behind, it sends at twice the rate
# until it catches up, and its corrected latency counts the delay), and
# its start-up costs it, in some runs, 0.37 or 0.75 s of that plan whatever
# the rate (a thread's connections start late; ours connect before the
# clock starts): its drop is judged from what the target received once it
# runs, counted by the target itself in 10 ms slots: from 1 s after the
# first request to 0.5 s before the last, at most 0.5% short of the rate,
# with no socket error, no non-2xx and a corrected p99 under the limit.
#
# Every run also reports the tool's CPU (user + system, children
# included) per request completed, and the end prints a table of every
# run by rate and tool: verdict and CPU per request side by side.
#
# Usage: bench/load.sh            (about 20-30 minutes)
#   DURATION=5s RATES="1000 2000 4000 ..." TRIES=2 REFINE=3 bench/load.sh
#   TOOLS="lean wrk2" bench/load.sh   only those (default: wrk lean wrk2 vegeta std)
#   PAIRS=3 CPU_RATE=10000 SEARCH=0 bench/load.sh   only the CPU pairs: lean and
#                        wrk2 taking turns at one rate, medians of CPU per request
#   WRK2=/path/to/wrk bench/load.sh   measures wrk2 too (its binary is also
#                        called wrk; without WRK2, a wrk2 on PATH is used, and
#                        without either wrk2 is left out and said so). Build
#                        it from github.com/giltene/wrk2 (make; needs a C
#                        compiler and libssl-dev). WRK2_THREADS (2) and
#                        WRK2_CONNS (200) are its -t and -c.
#   PIN=1 bench/load.sh  pins the target to CPU 0 and the load tool to CPU 1
#                        (taskset), so each tool has one core of its own
#                        and the comparison measures the generators rather
#                        than how they share a core with the target.
#
# Needs Go and network access to install vegeta (at run time, into a temp
# dir; never into go.mod) and wrk (apt-get, when missing) for the
# closed-loop reference. Not part of the test suite.
set -euo pipefail

DURATION=${DURATION:-5s}
RATES=${RATES:-"2000 5000 8000 10000 12000 15000 20000 25000 30000 35000 40000 45000 50000 60000 70000 80000"}
TRIES=${TRIES:-2}   # a rate counts as clean if any of TRIES runs is clean (noise on shared machines)
REFINE=${REFINE:-3} # bisection steps between the last clean and the first unclean rate
P99_MS=${P99_MS:-50}
PIN=${PIN:-0}
WRK2=${WRK2:-$(command -v wrk2 || true)}
WRK2_THREADS=${WRK2_THREADS:-2}
WRK2_CONNS=${WRK2_CONNS:-200}
TOOLS=${TOOLS:-"wrk lean wrk2 vegeta std"}
CPU_RATE=${CPU_RATE:-10000} # the rate of the CPU pairs (cpu_pairs)
PAIRS=${PAIRS:-3}           # alternating lean/wrk2 runs at CPU_RATE, medians compared (0: none)
SEARCH=${SEARCH:-1}         # 0: only the CPU pairs, no search for the clean rates
if [[ -n $WRK2 && ! -x $WRK2 ]]; then
	echo "bench: WRK2=$WRK2 is not an executable" >&2
	exit 2
fi
pin_target=() pin_tool=()
if [[ $PIN == 1 ]]; then
	command -v taskset >/dev/null || { echo "bench: PIN=1 needs taskset (util-linux)" >&2; exit 2; }
	pin_target=(taskset -c 0) pin_tool=(taskset -c 1)
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
cleanup() {
	if [[ -f $tmp/target.pid ]]; then kill "$(cat "$tmp/target.pid")" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "bench: building the target, ratelimit and a JSON reader in $tmp" >&2
mkdir -p "$tmp/target" "$tmp/judge" "$tmp/bin"
cat >"$tmp/target/main.go" <<'EOF'
// A trivial HTTP target: 200 "ok" on every path, loopback, free port. It
// counts the requests it receives in 10 ms slots; on SIGTERM it writes the
// counts (one line per slot from the first request to the last) to the
// file named by its argument, and exits: what every tool delivered, seen
// from the same side.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

const slot = 10 * time.Millisecond

var slots [60000]atomic.Int64 // 10 minutes

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	start := time.Now()
	body := []byte("ok\n")
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if k := int(time.Since(start) / slot); k < len(slots) {
				slots[k].Add(1)
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		}))
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if len(os.Args) > 1 {
		f, err := os.Create(os.Args[1])
		if err == nil {
			w := bufio.NewWriter(f)
			first, last := -1, -1
			for k := range slots {
				if slots[k].Load() > 0 {
					if first < 0 {
						first = k
					}
					last = k
				}
			}
			for k := first; first >= 0 && k <= last; k++ {
				fmt.Fprintln(w, slots[k].Load())
			}
			_ = w.Flush()
			_ = f.Close()
		}
	}
	os.Exit(0)
}
EOF
cat >"$tmp/judge/main.go" <<'EOF'
// judge reads one result and prints "clean|unclean <details>".
//   judge ours FILE PLANNED P99MS CPUFILE [detail]  (a ratelimit load -o json document;
//                                            detail: what was sent, dropped and why)
//   judge vegeta FILE PLANNED P99MS CPUFILE          (a vegeta report -type=json document)
//   judge wrk2 FILE RATE P99MS CPUFILE SECS CONNS_PER_THREAD ARRIVALS  (wrk2 --latency output;
//                                            ARRIVALS: the target's counts per 10 ms)
//   judge cpu CPUFILE -- COMMAND...    runs COMMAND and writes the CPU it used
//                                      (user + system seconds, children included) to CPUFILE
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	if os.Args[1] == "cpu" {
		runTimed(os.Args[2], os.Args[4:])
		return
	}
	b, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Println("unclean cannot-read", err)
		return
	}
	planned, _ := strconv.ParseInt(os.Args[3], 10, 64)
	limit, _ := strconv.ParseFloat(os.Args[4], 64)
	cpu := cpuSeconds(os.Args[5])
	switch os.Args[1] {
	case "ours":
		var d struct {
			Planned, Sent, Dropped, Completed, Failed int64
			Status                                    map[string]int64
			Due                                       struct{ P50, P99, Max float64 } `json:"latency_from_due_ms"`
			Send                                      struct{ P99 float64 } `json:"latency_ms"`
			Late                                      struct{ P99 float64 } `json:"lateness_ms"`
			VUs                                       struct {
				Peak int64 `json:"peak"`
			} `json:"vus"`
			DroppedNoVU int64 `json:"dropped_no_vu"`
			DroppedLate int64 `json:"dropped_late"`
			Generator   struct {
				Reasons []string `json:"reasons"`
			} `json:"generator"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			fmt.Println("unclean bad-json", err)
			return
		}
		clean := d.Planned == planned && d.Sent == planned && d.Dropped == 0 && d.Failed == 0 &&
			d.Status["200"] == planned && d.Due.P99 < limit
		if len(os.Args) > 6 && os.Args[6] == "detail" {
			fmt.Printf("sent %d of %d planned (%.1f%%), %d dropped (%d for want of a VU, %d late), %d failed\n",
				d.Sent, planned, 100*float64(d.Sent)/float64(max(planned, 1)), d.Dropped, d.DroppedNoVU, d.DroppedLate, d.Failed)
			fmt.Printf("latency from due: p50 %.1f ms, p99 %.1f ms, max %.1f ms; lateness p99 %.1f ms; %d VUs\n",
				d.Due.P50, d.Due.P99, d.Due.Max, d.Late.P99, d.VUs.Peak)
			for _, r := range d.Generator.Reasons {
				fmt.Println("generator: " + r)
			}
			return
		}
		fmt.Printf("%s sent=%d/%d dropped=%d failed=%d p99_due=%.1fms p99_send=%.1fms lateness_p99=%.1fms vus=%d cpu_per_req=%s\n",
			word(clean), d.Sent, planned, d.Dropped, d.Failed, d.Due.P99, d.Send.P99, d.Late.P99, d.VUs.Peak, perReq(cpu, d.Status["200"]))
	case "vegeta":
		var d struct {
			Requests  int64            `json:"requests"`
			Success   float64          `json:"success"`
			Rate      float64          `json:"rate"`
			Status    map[string]int64 `json:"status_codes"`
			Latencies struct {
				P99 float64 `json:"99th"`
			} `json:"latencies"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			fmt.Println("unclean bad-json", err)
			return
		}
		p99 := d.Latencies.P99 / 1e6
		short := max(1, planned/1000)
		clean := d.Requests >= planned-short && d.Success == 1 && d.Status["200"] == d.Requests && p99 < limit
		fmt.Printf("%s sent=%d/%d success=%.4f p99_send=%.1fms achieved=%.0f/s cpu_per_req=%s\n",
			word(clean), d.Requests, planned, d.Success, p99, d.Rate, perReq(cpu, d.Status["200"]))
	case "wrk2":
		// judge wrk2 FILE RATE P99MS CPUFILE SECS CONNS_PER_THREAD ARRIVALS
		// wrk2 never drops a request: when it falls behind it sends at
		// twice the rate until it catches up, and its corrected latency
		// (from when each request was meant to go) counts the delay, as
		// ours from due does. But its start-up costs it, in some runs,
		// 0.37 or 0.75 s of its plan whatever the rate (a thread's
		// connections start that late and the run's end does not move),
		// which says nothing about the rate it sustains: ours connects
		// before its clock starts. So its drop is judged from what the
		// target received once both threads run: the requests that
		// arrived from 1 s after the first to 0.5 s before the last,
		// against rate x that span, short by at most 0.5%.
		rate, _ := strconv.ParseFloat(os.Args[3], 64)
		secs, _ := strconv.ParseFloat(os.Args[6], 64)
		perThread, _ := strconv.ParseFloat(os.Args[7], 64)
		want := wrk2Plan(rate, secs, perThread)
		done, errs, non2xx, p99 := readWrk2(string(b))
		got, span := steady(os.Args[8])
		short := rate*span - float64(got)
		clean := done > 0 && span > 0 && short <= 0.005*rate*span && errs == 0 && non2xx == 0 && p99 >= 0 && p99 < limit
		fmt.Printf("%s done=%d/%.0f (%.1f%%) steady=%d/%.0f over %.2fs (short %.0f) socket_errors=%d non2xx=%d p99_corrected=%.1fms cpu_per_req=%s\n",
			word(clean), done, want, 100*float64(done)/want, got, rate*span, span, max(short, 0), errs, non2xx, p99, perReq(cpu, done))
	}
}

// steady reads the target's counts per 10 ms slot and returns the
// requests that arrived from 1 s after the first slot to 0.5 s before the
// last, and that span in seconds (0 when the run was too short).
func steady(file string) (int64, float64) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0
	}
	lines := strings.Fields(string(b))
	from, to := 100, len(lines)-50
	if to <= from {
		return 0, 0
	}
	var n int64
	for _, l := range lines[from:to] {
		v, _ := strconv.ParseInt(l, 10, 64)
		n += v
	}
	return n, float64(to-from) / 100
}

// wrk2Plan is what wrk2 plans to send: it staggers the starts of a
// thread's connections 5 ms apart, so a run of secs plans
// rate x (secs - 2.5 ms x (connections per thread - 1)).
func wrk2Plan(rate, secs, perThread float64) float64 {
	return rate * (secs - 0.0025*(perThread-1))
}

// readWrk2 reads wrk2 --latency output: requests completed, socket
// errors, non-2xx responses and the corrected p99 in ms (-1: none).
func readWrk2(out string) (done, errs, non2xx int64, p99 float64) {
	p99 = -1
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			done, _ = strconv.ParseInt(f[0], 10, 64)
		case len(f) >= 2 && f[0] == "99.000%" && p99 < 0:
			p99 = wrkMs(f[1])
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			for _, n := range regexp.MustCompile(`\d+`).FindAllString(line, -1) {
				k, _ := strconv.ParseInt(n, 10, 64)
				errs += k
			}
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:"):
			non2xx, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
	}
	return done, errs, non2xx, p99
}

// runTimed runs cmd with this process's standard streams and writes the
// CPU it used (user + system, in seconds) to file; it exits as cmd did.
func runTimed(file string, cmd []string) {
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := c.Run()
	if c.ProcessState != nil {
		cpu := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		_ = os.WriteFile(file, []byte(strconv.FormatFloat(cpu.Seconds(), 'f', 4, 64)+"\n"), 0o644)
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
}

// cpuSeconds reads what runTimed wrote (-1: nothing).
func cpuSeconds(file string) float64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return -1
	}
	return v
}

// perReq is the CPU per request completed, in microseconds.
func perReq(cpu float64, done int64) string {
	if cpu < 0 || done <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fus", cpu*1e6/float64(done))
}

// wrkMs reads one of wrk's durations ("812.00us", "12.80ms", "1.02s", "2.00m") in ms.
func wrkMs(s string) float64 {
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"us", 0.001}, {"ms", 1}, {"s", 1000}, {"m", 60000}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return f * u.ms
		}
	}
	return -1
}

func word(clean bool) string {
	if clean {
		return "clean"
	}
	return "unclean"
}
EOF
printf 'module bench/target\n\ngo 1.26.0\n' >"$tmp/target/go.mod"
printf 'module bench/judge\n\ngo 1.26.0\n' >"$tmp/judge/go.mod"
(cd "$tmp/target" && go build -o "$tmp/bin/target" .)
(cd "$tmp/judge" && go build -o "$tmp/bin/judge" .)
(cd "$repo" && go build -o "$tmp/bin/ratelimit" .)
if [[ " $TOOLS " == *" vegeta "* ]]; then
	echo "bench: installing vegeta (go install github.com/tsenart/vegeta/v12@latest into $tmp/bin)" >&2
	(cd "$tmp" && GOBIN="$tmp/bin" GOFLAGS= go install github.com/tsenart/vegeta/v12@latest)
fi

if [[ " $TOOLS " == *" wrk "* ]] && ! command -v wrk >/dev/null 2>&1; then
	echo "bench: installing wrk (apt-get) for the closed-loop reference" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

# A fresh target for every run: a run that overloads it (vegeta past its
# limit opens thousands of connections) must not slow the next one down.
url=""
# Runs happen in command substitutions (subshells), so the pid of the
# running target lives in a file, not a variable: each start stops the
# one before, whichever subshell started it.
stop_target() {
	local pid
	pid=$(cat "$tmp/target.pid" 2>/dev/null || true)
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	fi
	rm -f "$tmp/target.pid"
}
start_target() {
	stop_target
	: >"$tmp/addr"
	rm -f "$tmp/arrivals"
	"${pin_target[@]}" "$tmp/bin/target" "$tmp/arrivals" >"$tmp/addr" &
	echo $! >"$tmp/target.pid"
	for _ in $(seq 50); do [[ -s $tmp/addr ]] && break; sleep 0.1; done
	url="http://$(cat "$tmp/addr")/"
}
secs=$(awk -v d="$DURATION" 'BEGIN { sub(/s$/, "", d); print d }')
echo "bench: $DURATION per run, a fresh target each; clean = all planned done with 200, nothing dropped, p99 < ${P99_MS} ms" >&2
echo "bench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); pinned: $PIN" >&2

# settle waits (up to 70 s) until the sockets of earlier runs have left
# TIME_WAIT: a run that overloaded the target (vegeta opens thousands of
# connections past its limit) must not hand the next run a crowded port
# space.
settle() {
	command -v ss >/dev/null || { sleep 1; return; }
	for _ in $(seq 70); do
		(($(ss -tan state time-wait | wc -l) < 1000)) && return
		sleep 1
	done
}

# run_one TOOL RATE: prints "clean|unclean details" for one run; the
# details end with the tool's CPU (user + system) per request completed.
run_one() {
	local tool=$1 rate=$2 planned=$(($2 * secs))
	settle
	start_target
	sleep 1
	rm -f "$tmp/cpu"
	case $tool in
	lean | std)
		"$tmp/bin/judge" cpu "$tmp/cpu" -- "${pin_tool[@]}" "$tmp/bin/ratelimit" load --target "$url" --rate "$rate/s" --duration "$DURATION" \
			--http-client "$tool" \
			--identities 0 --pre-allocated-vus 50 --max-vus 1000 --timeout 10s --max-failed 100% \
			-o json >"$tmp/ours.json" 2>"$tmp/ours.err" || true
		"$tmp/bin/judge" ours "$tmp/ours.json" "$planned" "$P99_MS" "$tmp/cpu"
		;;
	vegeta)
		echo "GET $url" | "$tmp/bin/judge" cpu "$tmp/cpu" -- "${pin_tool[@]}" "$tmp/bin/vegeta" attack -rate="$rate/s" -duration="$DURATION" -timeout=10s \
			>"$tmp/veg.bin" 2>"$tmp/veg.err" || true
		"$tmp/bin/vegeta" report -type=json "$tmp/veg.bin" >"$tmp/veg.json" 2>>"$tmp/veg.err" || true
		"$tmp/bin/judge" vegeta "$tmp/veg.json" "$planned" "$P99_MS" "$tmp/cpu"
		;;
	wrk2)
		"$tmp/bin/judge" cpu "$tmp/cpu" -- "${pin_tool[@]}" "$WRK2" -t"$WRK2_THREADS" -c"$WRK2_CONNS" -d"$DURATION" -R"$rate" --latency "$url" \
			>"$tmp/wrk2.out" 2>&1 || true
		stop_target # writes what it received
		"$tmp/bin/judge" wrk2 "$tmp/wrk2.out" "$rate" "$P99_MS" "$tmp/cpu" "$secs" $((WRK2_CONNS / WRK2_THREADS)) "$tmp/arrivals"
		;;
	esac
}

# detail_lean RATE: one lean run at RATE, told in full (sent, drops and why,
# latency from due).
detail_lean() {
	local rate=$1 planned=$(($1 * secs))
	settle
	start_target
	sleep 1
	"$tmp/bin/judge" cpu "$tmp/cpu" -- "${pin_tool[@]}" "$tmp/bin/ratelimit" load --target "$url" --rate "$rate/s" --duration "$DURATION" \
		--http-client lean \
		--identities 0 --pre-allocated-vus 50 --max-vus 1000 --timeout 10s --max-failed 100% \
		-o json >"$tmp/ours.json" 2>"$tmp/ours.err" || true
	"$tmp/bin/judge" ours "$tmp/ours.json" "$planned" "$P99_MS" "$tmp/cpu" detail
}

# try TOOL RATE: clean if any of TRIES runs is clean; prints the line and
# keeps it (the table at the end).
try() {
	local line
	for _ in $(seq "$TRIES"); do
		line=$(run_one "$1" "$2")
		printf '  %-7s %6d/s  %s\n' "$1" "$2" "$line" >&2
		printf '%s %d %s %s\n' "$1" "$2" "${line%% *}" "$(grep -o 'cpu_per_req=[^ ]*' <<<"$line" | cut -d= -f2)" >>"$tmp/runs"
		[[ $line == clean* ]] && return 0
	done
	return 1
}

# highest TOOL: steps up RATES, then bisects; prints the highest clean rate.
highest() {
	local tool=$1 best=0 fail=0 r
	for r in $RATES; do
		if try "$tool" "$r"; then best=$r; else fail=$r; break; fi
	done
	if ((fail > 0)); then
		for _ in $(seq "$REFINE"); do
			r=$(((best + fail) / 2))
			((r <= best || r >= fail)) && break
			if try "$tool" "$r"; then best=$r; else fail=$r; fi
		done
	fi
	echo "$best"
}

# wrk_rate: the requests per second wrk drives the target at, closed loop
# (50 connections, as many requests as they can; no schedule, so no
# notion of clean: the ceiling an open-model generator is measured against).
wrk_rate() {
	settle
	start_target
	sleep 1
	"${pin_tool[@]}" wrk -t1 -c50 -d"$DURATION" "$url" 2>/dev/null | awk '/^Requests\/sec:/ { printf "%d", $2 }'
}

# ratio A B: A/B to two places, or a word when B never ran clean.
ratio() {
	if (($2 > 0)); then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f x", a / b }'; else echo "n/a (never clean)"; fi
}

has() { [[ " $TOOLS " == *" $1 "* ]]; }

: >"$tmp/runs"
# cpu_pairs: PAIRS alternating runs of lean and wrk2 at CPU_RATE, each
# one's CPU (user + system) per request completed, and the ratio of the
# medians: what the generator costs per request next to its peer.
cpu_pairs() {
	local i line lc=() wc=()
	for i in $(seq "$PAIRS"); do
		line=$(run_one lean "$CPU_RATE")
		printf '  pair %d: lean %6d/s  %s\n' "$i" "$CPU_RATE" "$line" >&2
		lc+=("$(grep -o 'cpu_per_req=[0-9.]*' <<<"$line" | cut -d= -f2)")
		line=$(run_one wrk2 "$CPU_RATE")
		printf '  pair %d: wrk2 %6d/s  %s\n' "$i" "$CPU_RATE" "$line" >&2
		wc+=("$(grep -o 'cpu_per_req=[0-9.]*' <<<"$line" | cut -d= -f2)")
	done
	local ml mw
	ml=$(printf '%s\n' "${lc[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	mw=$(printf '%s\n' "${wc[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	echo "CPU per request at $CPU_RATE/s, median of $PAIRS alternating pairs: lean ${ml} us (${lc[*]}), wrk2 ${mw} us (${wc[*]}); lean/wrk2 $(awk -v a="$ml" -v b="$mw" 'BEGIN { printf "%.2f", a / b }') (goal <= 1.0)"
}
pairs=""
if [[ -n $WRK2 ]] && has wrk2 && has lean && ((PAIRS > 0)); then
	echo "bench: CPU per request, lean and wrk2 taking turns at $CPU_RATE/s" >&2
	pairs=$(cpu_pairs)
	echo "$pairs" >&2
fi
if [[ $SEARCH == 0 ]]; then
	echo
	echo "$pairs"
	exit 0
fi

wrk1=0 lean=0 w2=0 veg=0 std=0
if has wrk; then
	echo "bench: wrk (closed loop)" >&2
	wrk1=$(wrk_rate)
	echo "  wrk      ${wrk1}/s" >&2
fi
if has lean; then
	echo "bench: ratelimit load --http-client lean" >&2
	lean=$(highest lean)
fi
if [[ -n $WRK2 ]] && has wrk2; then
	echo "bench: wrk2 -t$WRK2_THREADS -c$WRK2_CONNS -R ($WRK2)" >&2
	w2=$(highest wrk2)
elif has wrk2; then
	echo "bench: no wrk2 (set WRK2=path or put wrk2 on PATH): left out" >&2
fi
if has vegeta; then
	echo "bench: vegeta" >&2
	veg=$(highest vegeta)
fi
if has std; then
	echo "bench: ratelimit load --http-client std" >&2
	std=$(highest std)
fi
# A second pass of each, in another order, so no tool always runs on a
# cooler machine; each keeps its better pass.
if has vegeta; then
	echo "bench: vegeta (second pass)" >&2
	veg2=$(highest vegeta)
	veg=$((veg2 > veg ? veg2 : veg))
fi
if [[ -n $WRK2 ]] && has wrk2; then
	echo "bench: wrk2 (second pass)" >&2
	w22=$(highest wrk2)
	w2=$((w22 > w2 ? w22 : w2))
fi
if has lean; then
	echo "bench: ratelimit load --http-client lean (second pass)" >&2
	lean2=$(highest lean)
	lean=$((lean2 > lean ? lean2 : lean))
fi
wrk=$wrk1
if has wrk; then
	echo "bench: wrk (closed loop, second pass)" >&2
	wrk2nd=$(wrk_rate)
	echo "  wrk      ${wrk2nd}/s" >&2
	wrk=$((wrk2nd > wrk1 ? wrk2nd : wrk1))
fi

over=0 detail=""
if ((lean > 0)); then
	over=$((lean * 3 / 2))
	echo "bench: ratelimit load --http-client lean at 1.5 x its clean rate ($over/s)" >&2
	detail=$(detail_lean "$over")
fi

echo
[[ -n $pairs ]] && echo "$pairs"
echo "per rate, every run (verdict, CPU per request completed: user + system over 200s):"
awk '{ k = $2; tools[$1] = 1; rates[k] = 1; cell[$1 "," k] = cell[$1 "," k] (cell[$1 "," k] == "" ? "" : " ") $3 " " $4 }
	END {
		n = 0; for (t in tools) names[++n] = t
		printf "%8s", "rate/s"; for (i = 1; i <= n; i++) printf "  %-34s", names[i]; printf "\n"
		m = 0; for (r in rates) list[++m] = r + 0
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (list[j] < list[i]) { x = list[i]; list[i] = list[j]; list[j] = x }
		for (i = 1; i <= m; i++) {
			printf "%8d", list[i]
			for (t = 1; t <= n; t++) { c = cell[names[t] "," list[i]]; printf "  %-34s", (c == "" ? "." : c) }
			printf "\n"
		}
	}' "$tmp/runs"
echo
if has wrk; then
	echo "wrk, closed loop (-t1 -c50):                               $wrk/s"
fi
if [[ -n $WRK2 ]] && has wrk2; then
	echo "highest clean rate, wrk2 -t$WRK2_THREADS -c$WRK2_CONNS (corrected p99 < ${P99_MS} ms, steady rate at the target): $w2/s"
elif has wrk2; then
	echo "highest clean rate, wrk2:                                  not measured (no wrk2)"
fi
has lean && echo "highest clean rate, ratelimit load --http-client lean (p99 from due < ${P99_MS} ms): $lean/s"
has std && echo "highest clean rate, ratelimit load --http-client std  (p99 from due < ${P99_MS} ms): $std/s"
has vegeta && echo "highest clean rate, vegeta                               (p99 from send < ${P99_MS} ms): $veg/s"
if [[ -n $WRK2 ]] && has wrk2 && has lean; then
	echo "ratio lean/wrk2:   $(ratio "$lean" "$w2") (goal >= 1.0 x)"
fi
if has vegeta && has lean; then echo "ratio lean/vegeta: $(ratio "$lean" "$veg") (goal >= 3 x)"; fi
if has std && has lean; then echo "ratio lean/std:    $(ratio "$lean" "$std")"; fi
if has std && has vegeta; then echo "ratio std/vegeta:  $(ratio "$std" "$veg")"; fi
if has wrk && has lean; then echo "ratio lean/wrk:    $(ratio "$lean" "$wrk") (closed loop: a ceiling)"; fi
if ((over > 0)); then
	echo "lean at 1.5 x its clean rate, $over/s (goal: >= 95% of the plan sent, the rest dropped with its cause; the target's closed-loop ceiling above bounds what any generator can send):"
	printf '%s\n' "$detail" | sed 's/^/  /'
fi
