#!/usr/bin/env bash
# make test: every step runs even when an earlier one failed, each failure is
# listed at the end, and the exit status is non-zero if any step failed.
#
# Steps: go vet (native, macOS arm64 and amd64); the tests too slow under the
# race detector (named Test…Timing…, which skip themselves under -race), run
# without it; the whole suite under -race and, beside it, the real agent
# CLI suite (internal/realcli), without it.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
started=$(date +%s)

# step NAME CMD...: runs CMD, its output on the terminal and in a log.
step() {
	local name=$1
	shift
	local t0=$(date +%s)
	echo "=== make test: $name"
	"$@" 2>&1 | grep -v -e 'no test files' -e 'no tests to run' | tee "$logdir/$name.log"
	local rc=${PIPESTATUS[0]}
	echo "=== make test: $name: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)") in $(($(date +%s) - t0)) s" | tee -a "$logdir/$name.log"
	# A file, not a variable: a step may run in a background subshell.
	[ "$rc" -eq 0 ] || touch "$logdir/$name.failed"
}

timing_pkgs=$(grep -rl --include='*_test.go' '^func Test[A-Za-z0-9_]*Timing' . | xargs -r -n1 dirname | sort -u)

# The three vets at once: each type-checks the whole tree for its
# platform, mostly on one core, before the tests need both.
step vet "$GO" vet ./... &
step vet-darwin-arm64 env CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 "$GO" vet ./... &
step vet-darwin-amd64 env CGO_ENABLED=0 GOOS=darwin GOARCH=amd64 "$GO" vet ./... &
wait
if [ -n "$timing_pkgs" ]; then
	# shellcheck disable=SC2086
	step unraced "$GO" test -count=1 -timeout 30m -run 'Timing' $timing_pkgs
fi
# The slowest packages first: go test starts the package runs in the
# order given once they are built, so the longest ones do not start last
# and leave a tail with one core idle.
slow="hm/internal/e2e hm/agent hm/internal/cli hm/broker hm/journal hm/internal/hub hm/internal/cockpit"
race_pkgs="$slow $("$GO" list ./... | grep -v '/internal/realcli$' | grep -vxF -f <(tr ' ' '\n' <<<"$slow"))"
# The real-CLI suite (without -race) runs beside the race step: it mostly
# waits on the CLIs and their scripted model, and it must pass on a busy
# machine anyway (make test-loaded). Its output is shown when it ends, not
# mixed into the race step's. (Tried in session 15, Gemini CLI lost a
# collapsed paste beside it in four of six runs: hm took an Enter that
# Gemini kept as a newline for a submission, fixed in session 19.)
echo "=== make test: realcli (beside the race step; its output when it ends)"
step realcli "$GO" test -count=1 -timeout 10m ./internal/realcli/ >/dev/null &
realcli=$!
# shellcheck disable=SC2086
step race "$GO" test -race -count=1 -timeout 30m -p 4 -parallel 4 $race_pkgs
wait "$realcli"
echo "=== make test: realcli"
cat "$logdir/realcli.log"

failed=()
for f in "$logdir"/*.failed; do
	[ -e "$f" ] && failed+=("$(basename "$f" .failed)")
done
echo
echo "=== make test: $(( $(date +%s) - started )) s in all"
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== make test: FAILED steps: ${failed[*]}"
	for f in "${failed[@]}"; do
		grep -h -e '^--- FAIL' -e '^    --- FAIL' -e '^FAIL' -e '^panic:' "$logdir/$f.log" | sed "s/^/  [$f] /"
	done
	exit 1
fi
echo "=== make test: all steps passed"
