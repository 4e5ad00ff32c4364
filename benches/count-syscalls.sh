#!/usr/bin/env bash
# System calls per request of `failover serve` and of the floor proxy, under
# real concurrency: what callgrind cannot show. It counts user space only
# and runs threads one at a time, so work a gateway does only when two
# workers meet (a check falling back to `statx` while another thread reads
# the same queue) never appears in its counts (docs/performance.md).
#
#   benches/count-syscalls.sh [FAILOVER_BINARY] [CONCURRENCY]
#
# Needs strace and wrk (`apt-get install strace wrk`). Builds the processes
# benchmark for its upstream and floor roles; FAILOVER_BINARY defaults to
# target/release/failover, CONCURRENCY to 16. Each process is warmed with
# 2 s of `wrk -t1`, then `strace -c -f` counts its calls for 5 s more of
# load; the table gives each call's count divided by the requests wrk
# completed, largest first.
set -euo pipefail

cd "$(dirname "$0")/.."
source benches/support/processes.sh
for tool in strace wrk; do
    command -v "$tool" > /dev/null || { echo "$0: needs $tool (apt-get install strace wrk)" >&2; exit 2; }
done
failover=${1:-target/release/failover} concurrency=${2:-16}
[ -x "$failover" ] || { echo "$0: no failover binary at $failover" >&2; exit 1; }
bench=$(processes_bench)

start_work
start_upstream
chat_request_lua "$work/post.lua"
start_floor
one_model_config "$work/config.json5" "$upstream"
start_gateway gateway "$failover" "$work/state" "$work/config.json5"

# Counts the calls of process `pid` serving at `address` under load and
# prints them per request.
count() {
    local label=$1 pid=$2 address=$3 tracer requests
    wrk -t1 -c"$concurrency" -d2s -s "$work/post.lua" "http://$address/v1/chat/completions" > /dev/null
    strace -c -f -p "$pid" -o "$work/$label.strace" 2> /dev/null &
    tracer=$!
    # strace attaches to each thread before it counts.
    sleep 1
    requests=$(wrk -t1 -c"$concurrency" -d5s -s "$work/post.lua" "http://$address/v1/chat/completions" \
        | grep -o '[0-9]* requests in' | grep -o '^[0-9]*')
    kill -INT "$tracer"
    wait "$tracer" || true
    echo "$label: $requests requests at concurrency $concurrency; calls per request"
    # strace's table: the calls in the fourth column (the `errors` column
    # after it may be empty), the name last.
    awk -v n="$requests" '$4 ~ /^[0-9]+$/ { printf "  %-16s %7.3f\n", $NF, $4 / n }' \
        "$work/$label.strace" | sort -k2 -g -r | head -12
}

count floor "$floor_pid" "$floor"
count gateway "$gateway_pid" "$gateway"
