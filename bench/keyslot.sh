#!/usr/bin/env bash
# bench/keyslot.sh: how fast `ratelimit keyslot` places keys, compared with
# asking a real cluster node (CLUSTER KEYSLOT, pipelined with redis-cli --pipe).
#
#   bench/keyslot.sh [N]      (N keys, default 1000000)
#
# Builds the binary into a temp dir, writes N keys to a temp file, times
#   ratelimit keyslot -f FILE -o json > /dev/null
# end to end, runs the in-memory Go benchmark (BenchmarkSlot), starts a
# disposable 3-primary cluster with `ratelimit sandbox --topology cluster`, sends the
# same N keys as pipelined CLUSTER KEYSLOT commands to one node, and prints
# keys/s for each and the ratio. Needs go, redis-server and redis-cli; stops
# the sandbox and removes the temp dir on exit.
set -euo pipefail

N=${1:-1000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d -t ratelimit-keyslot-bench.XXXXXX)
SB_PID=""
cleanup() {
	if [[ -n $SB_PID ]] && kill -0 "$SB_PID" 2>/dev/null; then
		kill -INT "$SB_PID" 2>/dev/null || true
		wait "$SB_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

now() { date +%s.%N; }
rate() { awk -v n="$1" -v s="$2" -v e="$3" 'BEGIN { printf "%.0f", n / (e - s) }'; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.3f", e - s }'; }

command -v redis-cli >/dev/null || { echo "redis-cli not found; install redis-server (Debian: apt-get install redis-server)" >&2; exit 2; }

echo "building ratelimit into $TMP"
(cd "$ROOT" && go build -o "$TMP/ratelimit" .)
BIN=$TMP/ratelimit

echo "writing $N keys"
# A mix of schemes: tagged tenants, untagged users, braces in odd places.
LC_ALL=C awk -v n="$N" 'BEGIN {
	for (i = 0; i < n; i++) {
		m = i % 4
		if (m == 0) printf "rl:{tenant:%d}:tb\n", i
		else if (m == 1) printf "rl:user:%d:sliding-window\n", i
		else if (m == 2) printf "session:%d{}:%d\n", i * 7919, i
		else printf "{{job}:%d}:lock\n", i
	}
}' > "$TMP/keys.txt"
# The same keys as RESP CLUSTER KEYSLOT commands for redis-cli --pipe.
LC_ALL=C awk '{ printf "*3\r\n$7\r\nCLUSTER\r\n$7\r\nKEYSLOT\r\n$%d\r\n%s\r\n", length($0), $0 }' "$TMP/keys.txt" > "$TMP/keys.resp"

echo "timing: ratelimit keyslot -f keys.txt -o json > /dev/null"
s=$(now)
"$BIN" keyslot -f "$TMP/keys.txt" -o json > /dev/null
e=$(now)
E2E_RATE=$(rate "$N" "$s" "$e")
E2E_SECS=$(secs "$s" "$e")

echo "timing: go test -bench BenchmarkSlot ./cluster"
MEM_RATE=$(cd "$ROOT" && go test -run '^$' -bench '^BenchmarkSlot$' -benchtime 2s ./cluster |
	awk '/^BenchmarkSlot/ { for (i = 1; i <= NF; i++) if ($(i+1) == "slots/s") printf "%.0f", $i }')

echo "starting a sandbox cluster"
"$BIN" sandbox --topology cluster --for 10m > "$TMP/sandbox.out" 2> "$TMP/sandbox.err" &
SB_PID=$!
URL=""
for _ in $(seq 1 300); do
	URL=$(grep -m1 '^redis://' "$TMP/sandbox.out" || true)
	[[ -n $URL ]] && break
	kill -0 "$SB_PID" 2>/dev/null || { cat "$TMP/sandbox.err" >&2; exit 1; }
	sleep 0.1
done
[[ -n $URL ]] || { echo "sandbox printed no URL" >&2; exit 1; }
HOSTPORT=${URL#redis://}
HOSTPORT=${HOSTPORT%%/*}
HOST=${HOSTPORT%:*}
PORT=${HOSTPORT##*:}

echo "timing: redis-cli --pipe with $N CLUSTER KEYSLOT commands to $HOSTPORT"
s=$(now)
PIPE_OUT=$(redis-cli -h "$HOST" -p "$PORT" --pipe < "$TMP/keys.resp")
e=$(now)
echo "$PIPE_OUT" | tail -1
grep -q "errors: 0, replies: $N" <<<"$PIPE_OUT" || { echo "redis-cli --pipe did not get $N clean replies" >&2; exit 1; }
SRV_RATE=$(rate "$N" "$s" "$e")
SRV_SECS=$(secs "$s" "$e")

echo
printf '%-58s %12s keys/s  (%ss)\n' "ratelimit keyslot -f FILE -o json, end to end" "$E2E_RATE" "$E2E_SECS"
printf '%-58s %12s keys/s\n' "cluster.Slot in memory (BenchmarkSlot)" "$MEM_RATE"
printf '%-58s %12s keys/s  (%ss)\n' "CLUSTER KEYSLOT via redis-cli --pipe (one node)" "$SRV_RATE" "$SRV_SECS"
awk -v a="$E2E_RATE" -v b="$SRV_RATE" -v m="$MEM_RATE" 'BEGIN {
	printf "ratio end to end / server: %.2fx; in memory / server: %.1fx\n", a / b, m / b
}'
