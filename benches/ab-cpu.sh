#!/usr/bin/env bash
# CPU per request of two `failover serve` builds and of the floor proxy,
# measured in close alternation: on a shared machine whose speed drifts
# within seconds, runs far apart see different machines, and a change of
# a few per cent only shows when each sample of A sits next to one of B
# (docs/performance.md).
#
#   benches/ab-cpu.sh BINARY_A BINARY_B [CONCURRENCY] [ROUNDS]
#
# Needs wrk (`apt-get install wrk`). Builds the processes benchmark for
# its upstream and floor roles. Each round loads the floor, A and B in
# turn (`wrk -t1`, 1 s of warm-up, 3 s counted) and prints their CPU µs per
# request (user + system from /proc/<pid>/stat, all threads); the last
# line gives the medians, each build's median ratio over the floor, and
# the median of B/A.
set -euo pipefail

cd "$(dirname "$0")/.."
source benches/support/processes.sh
[ $# -ge 2 ] || { sed -n 2,16p "$0" >&2; exit 2; }
command -v wrk > /dev/null || { echo "$0: needs wrk (apt-get install wrk)" >&2; exit 2; }
binary_a=$1 binary_b=$2 concurrency=${3:-16} rounds=${4:-8}
for binary in "$binary_a" "$binary_b"; do
    [ -x "$binary" ] || { echo "$0: no failover binary at $binary" >&2; exit 1; }
done
bench=$(processes_bench)

start_work
start_upstream
start_floor

chat_request_lua "$work/post.lua"
one_model_config "$work/config.json5" "$upstream"
declare -A pid address
for side in a b; do
    binary=binary_$side
    start_gateway "$side" "${!binary}" "$work/state-$side" "$work/config.json5"
    pid[$side]=$gateway_pid
    address[$side]=$gateway
done

# CPU ticks (user + system, all threads) of process `pid`.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Loads `address` and prints the CPU µs per request of process `pid`.
measure() {
    local pid=$1 address=$2 before after requests
    wrk -t1 -c"$concurrency" -d1s -s "$work/post.lua" "http://$address/v1/chat/completions" > /dev/null
    before=$(ticks "$pid")
    requests=$(wrk -t1 -c"$concurrency" -d3s -s "$work/post.lua" "http://$address/v1/chat/completions" \
        | grep -o '[0-9]* requests in' | grep -o '^[0-9]*')
    after=$(ticks "$pid")
    awk -v t=$((after - before)) -v n="$requests" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.1f", t / hz * 1e6 / n }'
}

echo "CPU µs/request at concurrency $concurrency: floor, A ($binary_a), B ($binary_b)"
for _ in $(seq 1 "$rounds"); do
    echo "$(measure "$floor_pid" "$floor") $(measure "${pid[a]}" "${address[a]}") $(measure "${pid[b]}" "${address[b]}")"
done | tee "$work/rounds"
sort_median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
median() { awk "{ print $1 }" "$work/rounds" | sort_median; }
printf 'median: floor %s, A %s (%.2f× the floor), B %s (%.2f× the floor), B/A %.3f\n' \
    "$(median '$1')" "$(median '$2')" "$(median '$2 / $1')" \
    "$(median '$3')" "$(median '$3 / $1')" "$(median '$3 / $2')"
