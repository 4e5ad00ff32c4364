#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, PARALLEL at a time
# (default 2: this machine's cores), seeded first (seed.sh). Prints each
# target's executions and whether it found a crash; a crash's input lands
# in fuzz/artifacts/<target>/ (reproduce: cargo +nightly fuzz run TARGET FILE).
set -uo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
parallel="${2:-2}"
./seed.sh >/dev/null
cargo +nightly fuzz build -O
mkdir -p logs
targets=(classify guest_readers trace_reader sse_decoder openai_request openai_reply anthropic_request config)
run() {
  local target="$1"
  cargo +nightly fuzz run -O "$target" -- -max_total_time="$seconds" -print_final_stats=1 \
    >"logs/$target.log" 2>&1
  local status=$?
  local units
  units="$(grep -m1 'stat::number_of_executed_units' "logs/$target.log" | awk '{print $2}')"
  echo "$target: exit $status, ${units:-?} executions in ${seconds}s$( [ $status -ne 0 ] && echo ' — FOUND A CRASH, see logs/'"$target"'.log')"
}
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do sleep 1; done
  run "$target" &
done
wait
