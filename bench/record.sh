#!/usr/bin/env bash
# bench/record.sh: peak memory and wall time of `ratelimit report --from
# k6 -` on a 10-million-line k6 --out json stream, piped from a generator
# and never stored: the reader must judge it in bounded memory (latency
# histograms, one timeline entry per second, models per identity and the
# reorder buffer), not in proportion to its length.
#
# The generator (awk, below) writes what k6 run --out json writes for a
# constant-arrival-rate run of RATE requests/s over KEYS API keys (the tag
# "key"), each request's points at its end, in the order the requests end:
# http_reqs, http_req_duration and seven more http_req_* timings and
# data_sent, ten lines per request. The target it pretends to be limits
# each key with a token bucket of 10 at 5/s (integer micro-tokens, as
# limiter/model counts them), deciding at the send; each key asks 10/s,
# so about half are refused. No k6 is run or installed (its licence rules
# it out here): the lines follow k6's documented schema.
#
# Usage: bench/record.sh                 (about a minute)
#   LINES=1000000 RATE=2000 KEYS=200 bench/record.sh
#
# Needs Go and GNU time (/usr/bin/time, installed with apt-get when
# missing). Not part of the test suite.
set -euo pipefail

LINES=${LINES:-10000000}
RATE=${RATE:-2000}
KEYS=${KEYS:-200}
PER_REQUEST=10

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -x /usr/bin/time ]]; then
	echo "bench: installing GNU time (apt-get) for peak RSS" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends time >/dev/null
fi

echo "bench: building ratelimit in $tmp" >&2
(cd "$repo" && go build -o "$tmp/ratelimit" .)

# gen writes LINES lines (rounded down to whole requests) of k6 NDJSON.
gen() {
	awk -v lines="$LINES" -v rate="$RATE" -v keys="$KEYS" -v per="$PER_REQUEST" '
	function stamp(ns,    s, frac) {
		s = int(ns / 1e9); frac = ns - s * 1e9
		return sprintf("2026-12-02T%02d:%02d:%02d.%09dZ", 12 + int(s / 3600), int((s % 3600) / 60), s % 60, frac)
	}
	function emit(i,    t, tags, d, metrics, m, k) {
		t = stamp(pend_end[i])
		d = pend_lat[i] / 1e6
		tags = sprintf("{\"expected_response\":\"%s\",\"group\":\"\",\"key\":\"k%d\",\"method\":\"GET\",\"name\":\"http://127.0.0.1:8011/hello\",\"proto\":\"HTTP/1.1\",\"scenario\":\"default\",\"status\":\"%d\",\"tls_version\":\"\",\"url\":\"http://127.0.0.1:8011/hello\"}", pend_status[i] == 200 ? "true" : "false", pend_key[i], pend_status[i])
		printf("{\"metric\":\"http_reqs\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":1,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"http_req_duration\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":%.6f,\"tags\":%s}}\n", t, d, tags)
		printf("{\"metric\":\"http_req_blocked\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":0.001521,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"http_req_connecting\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":0,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"http_req_tls_handshaking\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":0,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"http_req_sending\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":0.012306,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"http_req_waiting\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":%.6f,\"tags\":%s}}\n", t, d * 0.9, tags)
		printf("{\"metric\":\"http_req_receiving\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":%.6f,\"tags\":%s}}\n", t, d * 0.1, tags)
		printf("{\"metric\":\"http_req_failed\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":0,\"tags\":%s}}\n", t, tags)
		printf("{\"metric\":\"data_sent\",\"type\":\"Point\",\"data\":{\"time\":\"%s\",\"value\":94,\"tags\":{\"group\":\"\",\"scenario\":\"default\"}}}\n", t)
	}
	BEGIN {
		srand(17)
		n = int(lines / per)
		step = 1e9 / rate
		np = 0
		for (i = 0; i < n; i++) {
			send = int(i * step)
			k = i % keys
			ms = int(send / 1e6)
			# the token bucket of the key: 10 at 5/s, in micro-tokens per ms
			if (!(k in last)) { tok[k] = 10000000; last[k] = ms }
			tok[k] += (ms - last[k]) * 5000; if (tok[k] > 10000000) tok[k] = 10000000
			last[k] = ms
			status = 429
			if (tok[k] >= 1000000) { tok[k] -= 1000000; status = 200 }
			lat = 500000 + int(rand() * 9500000)          # 0.5 to 10 ms
			# emit, in end order, every pending request that ended by now
			while (np > 0 && pend_end[1] <= send) {
				emit(1)
				for (j = 1; j < np; j++) { pend_end[j] = pend_end[j+1]; pend_lat[j] = pend_lat[j+1]; pend_status[j] = pend_status[j+1]; pend_key[j] = pend_key[j+1] }
				np--
			}
			# insert this one by its end
			j = np + 1
			while (j > 1 && pend_end[j-1] > send + lat) { pend_end[j] = pend_end[j-1]; pend_lat[j] = pend_lat[j-1]; pend_status[j] = pend_status[j-1]; pend_key[j] = pend_key[j-1]; j-- }
			pend_end[j] = send + lat; pend_lat[j] = lat; pend_status[j] = status; pend_key[j] = k
			np++
		}
		for (j = 1; j <= np; j++) emit(j)
	}'
}

requests=$((LINES / PER_REQUEST))
echo "bench: $requests requests ($((requests * PER_REQUEST)) lines) at $RATE/s over $KEYS keys, $((requests / RATE)) s of recording" >&2

echo "bench: the generator alone (awk to /dev/null)" >&2
/usr/bin/time -f "%e s, peak RSS %M KB" -o "$tmp/gen.time" bash -c "$(declare -f gen); LINES=$LINES RATE=$RATE KEYS=$KEYS PER_REQUEST=$PER_REQUEST gen > /dev/null"

echo "bench: generator | ratelimit report --from k6 - (under /usr/bin/time -v)" >&2
set +e
gen | /usr/bin/time -v -o "$tmp/report.time" "$tmp/ratelimit" report --from k6 - \
	--identity-tag key --expect token-bucket:burst=10,rate=5/s >"$tmp/report.txt" 2>"$tmp/report.err"
code=$?
set -e

grep -E "^  allowed [0-9]+ of|^  tolerance|^(PASS|FAIL)" "$tmp/report.txt"
if [[ -s $tmp/report.err ]]; then cat "$tmp/report.err" >&2; fi
echo
echo "exit code:                 $code"
echo "lines read:                $((requests * PER_REQUEST))"
echo "generator alone:           $(cat "$tmp/gen.time")"
grep -E "Elapsed \(wall clock\)|Maximum resident set size|User time|System time" "$tmp/report.time" | sed -E 's/^\s+/ratelimit report: /'
