#!/usr/bin/env bash
# Checks that go.work lists every module of the repository and that each
# module's requirements on sibling modules are replaced by relative paths
# that exist. Prints what is wrong and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=github.com/sluicerpc/sluice
status=0
mods=$(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' | sed 's|^\./||; s|/go.mod$||' | sort)
for m in $mods; do
	if ! grep -Eq "^[[:space:]]*\./$m\$|^use \./$m\$" go.work; then
		echo "go.work does not use ./$m"; status=1
	fi
	# every sibling requirement needs a replace to an existing relative dir
	for dep in $(grep -Eo "$prefix/[A-Za-z0-9_./-]+ v0\.0\.0" "$m/go.mod" | awk '{print $1}' | sort -u); do
		rel=$(grep -E "^[[:space:]]*(replace[[:space:]]+)?$dep[[:space:]]+=>" "$m/go.mod" | sed -E 's/.*=>[[:space:]]*//' | awk '{print $1}' | head -1)
		if [ -z "$rel" ]; then echo "$m/go.mod: $dep has no replace directive"; status=1; continue; fi
		want=${dep#"$prefix/"}
		if [ "$(cd "$m/$rel" 2>/dev/null && pwd)" != "$(pwd)/$want" ]; then
			echo "$m/go.mod: $dep => $rel does not point at ./$want"; status=1
		fi
	done
done
# each module builds on its own (its replaces and go.sum complete, as
# users outside the workspace see it)
for m in $mods; do
	if ! out=$(cd "$m" && GOWORK=off GOFLAGS=-mod=readonly go list -deps -test ./... 2>&1 >/dev/null); then
		echo "$m does not build outside the workspace (go mod tidy there; a sibling needs a replace):"; echo "$out" | head -5; status=1
	fi
done
# spi is the contract third parties build on: standard library only.
nonstd=$(cd spi && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v "^$prefix/spi" || true)
if [ -n "$nonstd" ]; then echo "spi imports outside the standard library: $nonstd"; status=1; fi
# Capabilities are declared by plugin binaries: standard library and spi only.
nonstd=$(cd conformance && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./capabilities | grep -v "^$prefix/spi\|^$prefix/conformance/capabilities" || true)
if [ -n "$nonstd" ]; then echo "conformance/capabilities imports outside the standard library and spi: $nonstd"; status=1; fi
# A plugin binary links neither the suite nor its test libraries.
for bin in cmd/sluice-builtins-plugin examples/thirdparty-limiter/cmd/gcra-plugin plugin/internal/testplugin; do
	bad=$(go list -deps "./$bin" | grep -E "^($prefix/conformance|github.com/stretchr/testify|pgregory.net/rapid)(/|\$)" | grep -v "^$prefix/conformance/capabilities$" || true)
	if [ -n "$bad" ]; then echo "plugin binary $bin links: $bad"; status=1; fi
done
exit $status
