#!/usr/bin/env bash
# Installs the programs the tests run for real (never mocks), each from its
# Debian package, only when the program is not already on PATH. Idempotent
# and quiet when everything is present (it then runs no package tool at
# all, so it costs a few command lookups); prints what it installs
# otherwise. Exits non-zero with a message naming the missing programs
# when it cannot install them (not Debian, no apt-get, not root and no
# sudo, or the archive unreachable).
#
# `make test` (and so .ci/run) runs it first. To add a dependency, add one
# "program package" line to NEEDS; a program that is not one command
# (a browser, a compiler plugin) gets the command the tests look up. The
# program field may list alternatives separated by "|": any one of them on
# PATH satisfies the line (a browser the tests find under several names).
set -euo pipefail

# NEEDS: one "<command on PATH> <Debian package providing it>" per line.
NEEDS='
etcd etcd-server
chromium|chromium-browser|google-chrome chromium
'

# present says whether one of the "|"-separated commands is on PATH.
present() {
	local c
	IFS='|' read -ra alts <<<"$1"
	for c in "${alts[@]}"; do
		command -v "$c" >/dev/null 2>&1 && return 0
	done
	return 1
}

missing_cmds=()
missing_pkgs=()
while read -r cmd pkg; do
	[ -n "$cmd" ] || continue
	if ! present "$cmd"; then
		missing_cmds+=("$cmd")
		missing_pkgs+=("$pkg")
	fi
done <<<"$NEEDS"

[ ${#missing_cmds[@]} -eq 0 ] && exit 0

fail() {
	echo "deps.sh: cannot install ${missing_pkgs[*]} (for ${missing_cmds[*]}): $*" >&2
	echo "deps.sh: install them by hand (Debian: apt-get install ${missing_pkgs[*]}) and run scripts/deps.sh again" >&2
	exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "apt-get not found (this script installs Debian packages)"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || fail "not root and sudo not found"
	as_root=(sudo)
fi

echo "deps.sh: installing ${missing_pkgs[*]} (for ${missing_cmds[*]})"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
install() {
	"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 "${missing_pkgs[@]}" >>"$log" 2>&1
}
# DPkg::Lock::Timeout waits for another apt run to finish instead of failing.
# An install from stale or absent package lists fails; refresh them once
# and try again.
if ! install; then
	"${as_root[@]}" apt-get update >>"$log" 2>&1 || { cat "$log" >&2; fail "apt-get update failed"; }
	install || { cat "$log" >&2; fail "apt-get install failed"; }
fi

for cmd in "${missing_cmds[@]}"; do
	present "$cmd" || fail "the packages installed but $cmd is still not on PATH"
done
echo "deps.sh: installed ${missing_pkgs[*]}"
