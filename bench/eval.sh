#!/usr/bin/env bash
# bench/eval.sh: script decisions per second, ours against redis-benchmark.
#
# Starts one disposable redis-server (ratelimit sandbox), then on that same
# server and at the same concurrency runs
#   1. the Go benchmark BenchmarkDecisions/store-conc
#      (limiter/redislimit/bench_test.go): token-bucket decisions through
#      redislimit.Store.Allow, what serve calls for every request: one
#      EVALSHA round trip per decision on a connection the store owns, CONC
#      goroutines on one key; its sequential twin store-seq gives the
#      allocations of one decision;
#   2. redis-benchmark doing EVALSHA of the same script (loaded first with
#      SCRIPT LOAD) with the same key and arguments, CONC connections;
# and prints both rates and their ratio. Both run on this machine, so the
# client's CPU competes with the server's: compare the ratio, not absolutes.
# SHARED=1 adds, for reference, the same decisions through
# redislimit.Allow on a shared client (Script.Run: a pool turn and a
# connection health check per call; eval's BenchmarkScriptDecisions).
#
# Environment: CONC (default 50), BENCHTIME (Go, default 5s), REQUESTS
# (redis-benchmark, default 200000), ROUNDS (turns of each tool, default 3;
# the ratio is of the medians), SHARED (0).
set -euo pipefail
cd "$(dirname "$0")/.."

CONC=${CONC:-50}
BENCHTIME=${BENCHTIME:-5s}
REQUESTS=${REQUESTS:-200000}
ROUNDS=${ROUNDS:-3}
SHARED=${SHARED:-0}
KEY='rl:{bench}:tb'
ARGS=(10 5 1) # capacity 10 tokens, 5 tokens/s, cost 1: as in the Go benchmark

for tool in go redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "bench/eval.sh: $tool not found (Debian: apt-get install redis-server redis-tools)" >&2; exit 2; }
done

tmp=$(mktemp -d)
sandbox_pid=""
cleanup() {
  if [ -n "$sandbox_pid" ]; then
    kill -INT "$sandbox_pid" 2>/dev/null || true
    wait "$sandbox_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/ratelimit" .
"$tmp/ratelimit" sandbox --for 30m >"$tmp/sandbox.out" 2>"$tmp/sandbox.err" &
sandbox_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -m1 '^redis://' "$tmp/sandbox.out" 2>/dev/null || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "bench/eval.sh: sandbox did not start:" >&2; cat "$tmp/sandbox.err" >&2; exit 1; }
hostport=${url#redis://}
hostport=${hostport%%/*}
host=${hostport%:*}
port=${hostport##*:}

echo "server: $(redis-server --version | awk '{print $1, $3}') at $url; concurrency $CONC; $(nproc) CPUs"

sha=$(redis-cli -h "$host" -p "$port" SCRIPT LOAD "$(cat limiter/token_bucket.lua)")
# The two tools take turns, ROUNDS times, and the ratio is of the medians:
# one run each, one after the other, measured the machine's drift (CPU
# frequency, the other tenants of a shared host) as much as the clients,
# and ratios of single runs ranged 0.82-1.08 on this 2-core machine.
go test -c -o "$tmp/redislimit.test" ./limiter/redislimit
rate_of() { awk -v name="$1" '$1 ~ name { for (i = 1; i <= NF; i++) if ($i == "decisions/s") print $(i-1) }'; }
allocs_of() { awk -v name="$1" '$1 ~ name { for (i = 1; i <= NF; i++) if ($i == "allocs/op") print $(i-1) }'; }
go_rates=() rb_rates=() sh_rates=()
for round in $(seq 1 "$ROUNDS"); do
  paths='store'
  [ "$SHARED" = 1 ] && paths='(store|shared)'
  go_out=$(RATELIMIT_BENCH_REDIS="$url" RATELIMIT_BENCH_CONC="$CONC" \
    "$tmp/redislimit.test" -test.run '^$' -test.bench "^BenchmarkDecisions\$/^$paths-conc\$" -test.benchtime "$BENCHTIME")
  g=$(echo "$go_out" | rate_of 'store-conc')
  rb_out=$(redis-benchmark -h "$host" -p "$port" -c "$CONC" -n "$REQUESTS" -q EVALSHA "$sha" 1 "$KEY" "${ARGS[@]}")
  rb_line=$(printf '%s\n' "$rb_out" | tr '\r' '\n' | grep 'requests per second' | tail -1)
  r=$(printf '%s\n' "$rb_line" | grep -Eo '[0-9.]+ requests per second' | awk '{print $1}')
  redis-cli -h "$host" -p "$port" DEL "$KEY" >/dev/null
  [ -n "$g" ] && [ -n "$r" ] || { echo "bench/eval.sh: could not read both rates in round $round" >&2; exit 1; }
  awk -v n="$round" -v g="$g" -v r="$r" 'BEGIN { printf "round %d: go %.0f decisions/s, redis-benchmark %.0f requests/s, ratio %.2f\n", n, g, r, g / r }'
  go_rates+=("$g") rb_rates+=("$r")
  if [ "$SHARED" = 1 ]; then
    s=$(echo "$go_out" | rate_of 'shared-conc')
    echo "         shared client (redislimit.Allow): $s decisions/s"
    sh_rates+=("$s")
  fi
done
seq_out=$(RATELIMIT_BENCH_REDIS="$url" "$tmp/redislimit.test" -test.run '^$' -test.bench '^BenchmarkDecisions$/-seq$' -test.benchtime 20000x)
echo "allocations per decision: store $(echo "$seq_out" | allocs_of 'store-seq'), shared client $(echo "$seq_out" | allocs_of 'shared-seq') (sequential, go test -benchmem)"
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
go_rate=$(median "${go_rates[@]}")
rb_rate=$(median "${rb_rates[@]}")

[ -n "$go_rate" ] && [ -n "$rb_rate" ] || { echo "bench/eval.sh: could not read both rates" >&2; exit 1; }
awk -v g="$go_rate" -v r="$rb_rate" -v c="$CONC" 'BEGIN {
  printf "go redislimit.Store.Allow: %7.0f decisions/s (%d goroutines, median)\n", g, c
  printf "redis-benchmark EVALSHA: %9.0f requests/s  (%d connections, median)\n", r, c
  printf "ratio go / redis-benchmark: %.2f\n", g / r
}'
