#!/usr/bin/env bash
# Runs the conformance suites from the repository root against every
# built-in limiter, endpoint policy and codec in process (each module's
# TestConformance*), and through the plugin bridge: the built-ins served by
# cmd/sluice-builtins-plugin and the example third-party kind served by its
# gcra-plugin binary, each checked by "sluice conformance --plugin". Prints one line per run:
#
#	conformance <implementation> <in-process|plugin> PASS|FAIL
#
# and the limiter suite's self-test table (class, planted, caught), in
# process and, with SLUICE_CONFORMANCE_BRIDGE=1 (make conformance-bridge),
# through the plugin bridge (every broken limiter served by a plugin
# process),
# and exits non-zero if any run fails. Set VERBOSE=1 to see go test output.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2

failed=0

# run <implementation> <dir> <go test args...>: one in-process run.
run() {
	local impl=$1 dir=$2
	shift 2
	local out status
	out=$(cd "$dir" && go test "$@" 2>&1)
	status=$?
	# A run in which no package ran a matching test is not a pass.
	if [[ $status -eq 0 ]] && ! grep '^ok' <<<"$out" | grep -vq 'no tests to run'; then
		status=1
	fi
	if [[ $status -eq 0 ]]; then
		echo "conformance $impl in-process PASS"
	else
		echo "conformance $impl in-process FAIL"
		failed=1
	fi
	if [[ $status -ne 0 || ${VERBOSE:-0} == 1 ]]; then
		sed 's/^/    /' <<<"$out" >&2
	fi
}

run concurrency limiters/concurrency -count=1 -run '^TestConformance$' .
run tokenbucket limiters/tokenbucket -count=1 -run '^TestConformance$' .
run fixedwindow limiters/window -count=1 -run '^TestConformanceFixed$' .
run slidingwindow limiters/window -count=1 -run '^TestConformanceSliding$' .
run example.com/gcra examples/thirdparty-limiter -count=1 -run '^TestConformance$' ./gcra
run circuit-breaker endpointpolicy -count=1 -run '^TestConformanceCircuitBreaker$' .
run adaptive-throttle endpointpolicy -count=1 -run '^TestConformanceAdaptiveThrottle$' .
run endpoint-concurrency endpointpolicy -count=1 -run '^TestConformanceEndpointConcurrency$' .
for c in zstd s2 gzip br identity; do
	run "$c" codecs -count=1 -run "^TestBuiltinCodecsPassTheConformanceSuite\$/^$c\$" .
done

# The limiter suite's self-test: broken limiters planted per class of bug,
# each of which must fail the check meant to catch it; prints its table
# (class, planted, caught).
out=$(cd conformance && go test -count=1 -run '^TestPlantedBugsByClass$' -v . 2>&1)
status=$?
grep 'selftest-table' <<<"$out" | sed 's/^.*selftest-table /    /'
if [[ $status -eq 0 ]]; then
	echo "conformance selftest in-process PASS"
else
	echo "conformance selftest in-process FAIL"
	sed 's/^/    /' <<<"$out" >&2
	failed=1
fi

# The self-test through the plugin bridge: each broken limiter served by a
# plugin process of its own, the suite run through the gRPC bridge; prints
# its table (class, planted, caught). It takes about 13 minutes, so it runs
# only with SLUICE_CONFORMANCE_BRIDGE=1 (make conformance-bridge), not in
# make test.
if [[ ${SLUICE_CONFORMANCE_BRIDGE:-} == 1 ]]; then
out=$(cd conformance && SLUICE_CONFORMANCE_BRIDGE=1 go test -count=1 -timeout 40m -run '^TestPlantedLimitersFailThroughThePluginBridge$' -v . 2>&1)
status=$?
grep 'selftest-bridge-table' <<<"$out" | sed 's/^.*selftest-bridge-table /    /'
if [[ $status -eq 0 ]] && grep -q '^--- PASS: TestPlantedLimitersFailThroughThePluginBridge' <<<"$out"; then
	echo "conformance selftest plugin PASS, except the known escapes the table counts (conformance/bridge_selftest_test.go knownBridgeEscapes)"
else
	echo "conformance selftest plugin FAIL"
	sed 's/^/    /' <<<"$out" >&2
	failed=1
fi
fi

# Through the bridge: build the plugin binaries and the sluice command, and
# let "sluice conformance" print the lines (it exits 1 if a kind fails).
bin=$(mktemp -d "${TMPDIR:-/tmp}/sluice-conformance-XXXXXX")
trap 'rm -rf "$bin"' EXIT
build() {
	local out
	if ! out=$(go build -o "$bin/$1" "$2" 2>&1); then
		echo "conformance $1 plugin FAIL"
		sed 's/^/    /' <<<"$out" >&2
		failed=1
		return 1
	fi
}
if build sluice ./cmd/sluice; then
	for p in "sluice-builtins-plugin ./cmd/sluice-builtins-plugin" "gcra-plugin ./examples/thirdparty-limiter/cmd/gcra-plugin"; do
		set -- $p
		if build "$1" "$2"; then
			# Plugins put their sockets in TMPDIR; keep them in $bin.
			TMPDIR="$bin" "$bin/sluice" conformance --plugin "$bin/$1" || failed=1
		fi
	done
fi

exit $failed
