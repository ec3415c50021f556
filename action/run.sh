#!/usr/bin/env bash
# Runs one ratelimit subcommand for action.yml: the text report in the
# log, the JSON document beside it (--out), Markdown appended to the job
# summary and JUnit written from that same document (ratelimit report),
# so the formats of one run never disagree. The step's exit code is the
# command's.
#
# Inputs (environment): INPUT_COMMAND (the subcommand and its arguments,
# split as the shell splits words), INPUT_JUNIT (path, "" for none),
# INPUT_SUMMARY (true/false). GitHub sets GITHUB_STEP_SUMMARY and
# GITHUB_OUTPUT; both are optional here.
set -uo pipefail
rl="${RATELIMIT:-ratelimit}"
if [ -z "${INPUT_COMMAND:-}" ]; then
	echo "ratelimit action: the command input is empty (e.g. keyslot --groups groups.txt)" >&2
	exit 2
fi
doc="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ratelimit-$$.json"
rm -f "$doc"
# Split the command as the shell splits words (quotes and backslashes
# honoured by xargs), without expanding anything: no $VAR, no $(...).
args=()
while IFS= read -r -d '' a; do args+=("$a"); done < <(printf '%s' "$INPUT_COMMAND" | xargs printf '%s\0')
if [ "${#args[@]}" -eq 0 ]; then
	echo "ratelimit action: cannot split the command input: $INPUT_COMMAND" >&2
	exit 2
fi
set -- "${args[@]}"
"$rl" "$@" --out "$doc"
code=$?
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	echo "exit-code=$code" >> "$GITHUB_OUTPUT"
	echo "document=$doc" >> "$GITHUB_OUTPUT"
fi
if [ -s "$doc" ]; then
	if [ "${INPUT_SUMMARY:-true}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
		"$rl" report "$doc" -o markdown >> "$GITHUB_STEP_SUMMARY" || true
	fi
	if [ -n "${INPUT_JUNIT:-}" ]; then
		"$rl" report "$doc" -o junit > "$INPUT_JUNIT" || true
	fi
elif [ "$code" -le 1 ]; then
	echo "ratelimit action: $1 wrote no document" >&2
fi
exit "$code"
