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
# refuse prints one line and ends the step as bad input (exit 2).
refuse() {
	echo "ratelimit action: $1" >&2
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		echo "exit-code=2" >> "$GITHUB_OUTPUT"
	fi
	exit 2
}
if [ -z "${INPUT_COMMAND:-}" ]; then
	refuse "the command input is empty (e.g. keyslot --groups groups.txt)"
fi
doc="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ratelimit-$$.json"
rm -f "$doc"
# Split the command as the shell splits words (quotes and backslashes
# honoured by xargs), without expanding anything: no $VAR, no $(...).
# An unmatched quote makes xargs drop the unfinished word and run the
# rest: its exit status is read, and such input refused (exit 2).
split="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ratelimit-$$.args"
printf '%s' "$INPUT_COMMAND" | xargs printf '%s\0' > "$split" 2>/dev/null
status=("${PIPESTATUS[@]}")
args=()
while IFS= read -r -d '' a; do args+=("$a"); done < "$split"
rm -f "$split"
if [ "${status[1]}" -ne 0 ]; then
	refuse "cannot split the command input: an unmatched quote; quote as the shell does"
fi
if [ "${#args[@]}" -eq 0 ]; then
	refuse "the command input holds no word"
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
