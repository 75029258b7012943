#!/usr/bin/env bash
# Runs BenchmarkPluginBridge ROUNDS times (default 10), each run measuring
# every case side by side, and prints the raw results, then one line per
# transport with the median over the runs of bridge ns/op divided by raw
# ns/op:
#
#	RATIO bridge/raw in-process <median>
#	RATIO bridge/raw subprocess <median>
#
# Per-run ratios cancel most of a shared machine's drift between runs.
set -euo pipefail
cd "$(dirname "$0")/../plugin"
rounds=${ROUNDS:-10}
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-plugin-XXXXXX")
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/plugin.test" .
for _ in $(seq "$rounds"); do
	"$dir/plugin.test" -test.run '^$' -test.bench '^BenchmarkPluginBridge$' -test.benchmem -test.count 1 2>/dev/null |
		grep '^BenchmarkPluginBridge/' | tee -a "$dir/results.txt"
done
awk '
	{ split($1, p, "/"); name = p[2]; sub(/-[0-9]+$/, "", name); ns[name] = $3 }
	/raw-subprocess/ {
		n++
		ip[n] = ns["bridge-in-process"] / ns["raw-in-process"]
		sp[n] = ns["bridge-subprocess"] / ns["raw-subprocess"]
	}
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	END {
		printf "RATIO bridge/raw in-process %.3f\n", median(ip, n)
		printf "RATIO bridge/raw subprocess %.3f\n", median(sp, n)
	}
' "$dir/results.txt"
