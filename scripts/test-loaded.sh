#!/usr/bin/env bash
# make test-loaded: make test while a CPU hog keeps every core busy, as on a
# developer's laptop in the middle of a build. RUNS=N repeats it N times and
# stops at the first failure.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
runs=${RUNS:-1}
hogbin=$(mktemp -d)/hog
"$GO" build -o "$hogbin" ./scripts/hog || exit 1
for i in $(seq 1 "$runs"); do
	"$hogbin" -for 2h &
	hog=$!
	t0=$(date +%s)
	echo "=== make test-loaded: run $i of $runs, hog pid $hog"
	make test
	rc=$?
	kill "$hog" 2>/dev/null
	wait "$hog" 2>/dev/null
	echo "=== make test-loaded: run $i: exit $rc in $(($(date +%s) - t0)) s"
	[ "$rc" -eq 0 ] || exit "$rc"
done
rm -rf "$(dirname "$hogbin")"
