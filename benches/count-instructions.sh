#!/usr/bin/env bash
# User-space instructions per request of `failover serve` and of the floor
# proxy, counted by callgrind: a figure machine noise does not move, for
# before/after comparisons on a shared, noisy machine (docs/performance.md).
# Kernel time is not counted.
#
#   benches/count-instructions.sh [FAILOVER_BINARY]
#
# Needs valgrind and wrk (`apt-get install valgrind wrk`). Builds the
# processes benchmark (for its upstream and floor roles); FAILOVER_BINARY
# defaults to the one that build makes. Each process is started under
# callgrind and warmed with 5 s of load; then the counters are zeroed,
# 15 s of `wrk -t1 -c4` are counted, and the count is divided by the
# requests wrk completed. With FAILOVER_KEEP_PROFILES=DIR the callgrind
# files are kept there, to read with `callgrind_annotate --inclusive=yes`.
set -euo pipefail

cd "$(dirname "$0")/.."
source benches/support/processes.sh
for tool in valgrind callgrind_control callgrind_annotate wrk; do
    command -v "$tool" > /dev/null || { echo "$0: needs $tool (apt-get install valgrind wrk)" >&2; exit 2; }
done

bench=$(processes_bench)
failover=${1:-target/release/failover}
[ -x "$failover" ] || { echo "$0: no failover binary at $failover" >&2; exit 1; }

# Keeps the callgrind files when asked to (see above).
keep_work() {
    if [ -n "${FAILOVER_KEEP_PROFILES:-}" ]; then
        mkdir -p "$FAILOVER_KEEP_PROFILES" && cp "$work"/cg.* "$FAILOVER_KEEP_PROFILES"/
    fi
}
start_work
start_upstream

chat_request_lua "$work/post.lua"

# Counts the process `pid` (whose callgrind file is `cg.<label>.<pid>`)
# serving at `address`: prints instructions per request.
count() {
    local label=$1 pid=$2 address=$3
    wrk -t1 -c4 -d5s -s "$work/post.lua" "http://$address/v1/chat/completions" > /dev/null
    callgrind_control -z "$pid" > /dev/null 2>&1
    wrk -t1 -c4 -d15s -s "$work/post.lua" "http://$address/v1/chat/completions" > "$work/$label.wrk"
    callgrind_control -d "$pid" > /dev/null 2>&1
    local requests instructions
    requests=$(grep -o '[0-9]* requests in' "$work/$label.wrk" | grep -o '^[0-9]*')
    instructions=$(callgrind_annotate "$(ls "$work"/cg."$label".*.1)" 2> /dev/null \
        | grep 'PROGRAM TOTALS' | tr -d , | awk '{print $1}')
    if grep -q 'Non-2xx' "$work/$label.wrk"; then
        echo "$0: $label answered errors:" >&2
        cat "$work/$label.wrk" >&2
        exit 1
    fi
    awk -v l="$label" -v r="$requests" -v i="$instructions" \
        'BEGIN { printf "%-14s %8d requests %10.1fk instructions per request\n", l, r, i / r / 1000 }'
}

valgrind --tool=callgrind --callgrind-out-file="$work/cg.floor.%p" \
    "$bench" --role floor "$upstream" > "$work/floor.log" 2>&1 &
pids+=($!)
count floor "${pids[-1]}" "$(address_in "$work/floor.log" "listening on ")"

mkdir -p "$work/state"
for provider in openai down; do
    add_key "$failover" "$work/state" "$provider"
done
for chain in one-model one-fallback; do
    case $chain in
        one-model) model='primary: "openai/gpt-x"' ;;
        one-fallback) model='primary: "down/gpt-x", fallbacks: ["openai/gpt-x"]' ;;
    esac
    cat > "$work/$chain.json5" << EOF
{ agents: { defaults: { model: { $model } } },
  models: { providers: {
    openai: { baseUrl: "$upstream/v1", api: "openai-chat" },
    down: { baseUrl: "$upstream/down/v1", api: "openai-chat" } } } }
EOF
    cp -r "$work/state" "$work/state-$chain"
    FAILOVER_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$work/cg.$chain.%p" \
        "$failover" --state-dir "$work/state-$chain" --config "$work/$chain.json5" \
        serve --listen 127.0.0.1:0 > "$work/$chain.log" 2>&1 &
    pids+=($!)
    count "$chain" "${pids[-1]}" "$(address_in "$work/$chain.log" "serving on http://")"
done
