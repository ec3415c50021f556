#!/usr/bin/env bash
# bench/race.sh: wall time per trial of `ratelimit race` at 200 and at
# 10000 goroutines, for each strategy, against a real standalone
# redis-server that the benchmark starts itself (package sandbox, with
# maxclients 20000) and stops afterwards.
#
#   bench/race.sh [COUNT_200] [COUNT_10000]
#
# Runs BenchmarkRace in package race: COUNT_200 trials per strategy at 200
# goroutines (default 20) and COUNT_10000 at 10000 (default 2). Reported
# per strategy: ns/op (a whole trial: warm-up of every connection, the race,
# reading and deleting the key), wall-ms/trial (barrier open to last reply),
# p99-ms/trial and admitted/trial. Needs go and redis-server, and an
# open-file limit of at least 10064 (ulimit -n). The 10000-goroutine watch
# trial takes several seconds: WATCH retries until the limit is reached.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
N200=${1:-20}
N10K=${2:-2}
cd "$ROOT"

if [[ $(ulimit -n) != unlimited && $(ulimit -n) -lt 10064 ]]; then
	ulimit -n 10064 2>/dev/null || {
		echo "bench/race.sh: the open-file limit $(ulimit -n) is below 10064; raise it (ulimit -n 20000) and rerun" >&2
		exit 2
	}
fi

go test ./race -run '^$' -bench '^BenchmarkRace$/^goroutines=200$' -benchtime "${N200}x" -timeout 30m
go test ./race -run '^$' -bench '^BenchmarkRace$/^goroutines=10000$' -benchtime "${N10K}x" -timeout 30m
