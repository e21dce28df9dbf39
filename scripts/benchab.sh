#!/bin/sh
# benchab.sh BASE [RUNS]: the broker's send→ACK and throughput benchmarks at
# commit BASE and at the working tree, run interleaved (base, head, base,
# head, …) so that the machine's load hits both alike; prints every run and
# the medians. Used for "no regression" checks (issue #13).
set -eu
base=${1:?usage: scripts/benchab.sh BASE [RUNS]}
runs=${2:-5}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./broker/)
(cd "$root" && go test -c -o "$tmp/head.test" ./broker/)

i=0
while [ "$i" -lt "$runs" ]; do
	for v in base head; do
		(cd "$root/broker" && "$tmp/$v.test" -test.run '^$' \
			-test.bench 'BenchmarkSendAck$|BenchmarkThroughput$' -test.benchtime 10000x) |
			awk -v v="$v" '/^Benchmark(SendAck|Throughput)/ {
				for (i = 2; i <= NF; i++) if ($i == "p50-ms" || $i == "p99-ms" || $i == "msgs/s") print v, $i, $(i-1)
			}'
	done
	i=$((i + 1))
done | tee "$tmp/runs"

echo
echo "median of $runs interleaved runs (base $base, head = working tree):"
for m in p50-ms p99-ms msgs/s; do
	for v in base head; do
		awk -v v="$v" -v m="$m" '$1 == v && $2 == m {print $3}' "$tmp/runs" | sort -g |
			awk -v v="$v" -v m="$m" '{a[NR] = $1} END {printf "%-6s %-7s %s\n", m, v, (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
	done
done
