#!/usr/bin/env bash
# Runs the limiter conformance suite for every built-in limiter in process,
# and through the plugin bridge, from the repository root. Prints one line
# per run:
#
#	conformance <implementation> <in-process|plugin> PASS|FAIL
#
# and exits non-zero if any run fails. Set VERBOSE=1 to see go test output.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2

example=examples/thirdparty-limiter
# The example module has relative replaces, so it builds on its own; use the
# workspace only once go.work lists it.
example_gowork=off
if grep -Eq "^[[:space:]]*(use[[:space:]]+)?\./${example}[[:space:]]*\)?$" go.work 2>/dev/null; then
	example_gowork=
fi

failed=0

# run <implementation> <mode> <dir> <gowork> <go test args...>
run() {
	local impl=$1 mode=$2 dir=$3 gowork=$4
	shift 4
	local out status
	if [[ -n $gowork ]]; then
		out=$(cd "$dir" && GOWORK=$gowork go test "$@" 2>&1)
	else
		out=$(cd "$dir" && go test "$@" 2>&1)
	fi
	status=$?
	# A run in which no package ran a matching test is not a pass.
	if [[ $status -eq 0 ]] && ! grep '^ok' <<<"$out" | grep -vq 'no tests to run'; then
		status=1
	fi
	if [[ $status -eq 0 ]]; then
		echo "conformance $impl $mode PASS"
	else
		echo "conformance $impl $mode FAIL"
		failed=1
	fi
	if [[ $status -ne 0 || ${VERBOSE:-0} == 1 ]]; then
		sed 's/^/    /' <<<"$out" >&2
	fi
}

run concurrency in-process limiters/concurrency "" -count=1 -run 'TestConformance' ./...
run tokenbucket in-process limiters/tokenbucket "" -count=1 -run 'TestConformance' ./...
run window in-process limiters/window "" -count=1 -run 'TestConformance' ./...
run example.com/gcra in-process "$example" "$example_gowork" -count=1 -run 'TestConformance' ./...
run plugin-testkind plugin plugin "" -count=1 -run 'Conformance' ./...
run example.com/gcra plugin "$example" "$example_gowork" -count=1 -run 'TestPluginConformance' ./...

exit $failed
