#!/usr/bin/env bash
# fuzz.sh: runs every fuzz target of the repository for FUZZTIME each
# (default 10m), one after the other, and stops at the first failure (its
# input is then in the package's testdata/fuzz). FUZZ, a regular
# expression, keeps only the targets whose name matches it:
#   FUZZTIME=10m FUZZ='Connection$' make fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10m}
filter=${FUZZ:-.}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
  dir=$(dirname "$file")
  module=$dir
  while [ ! -f "$module/go.mod" ]; do module=$(dirname "$module"); done
  pkg=./${dir#"$module"/}
  [ "$dir" = "$module" ] && pkg=.
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r name; do
    if ! [[ $name =~ $filter ]]; then continue; fi
    echo "== $name ($dir) for $fuzztime"
    (cd "$module" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg") | tail -3
  done
done
