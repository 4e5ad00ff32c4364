# Shared by the scripts that load the processes benchmark's roles over
# loopback (`count-instructions.sh`, `ab-cpu.sh`); sourced from the
# repository's root, after `set -euo pipefail`.

# Builds the processes benchmark (its upstream and floor roles) and prints
# the path of its binary.
processes_bench() {
    local bench
    bench=$(cargo bench --bench processes --no-run --message-format=json 2> /dev/null \
        | grep -o '"executable":"[^"]*processes-[^"]*"' | tail -1 | cut -d'"' -f4)
    [ -x "$bench" ] || { echo "$0: could not build the processes benchmark" >&2; exit 1; }
    echo "$bench"
}

# Waits until `log` prints an address after `marker`, and prints it.
address_in() {
    local log=$1 marker=$2
    for _ in $(seq 1 300); do
        if grep -q "$marker" "$log" 2> /dev/null; then
            grep -o "$marker[^ ]*" "$log" | head -1 | sed "s|$marker||; s|^http://||"
            return
        fi
        sleep 0.2
    done
    echo "$0: nothing listening (see $log)" >&2
    exit 1
}

# Writes to `file` the wrk script of the chat request the benchmark sends.
# The model is the configured chain's (`auto`): a request naming
# `provider/model` starts its run there and never sees the chain, so a
# one-fallback gateway would take the one-model path.
chat_request_lua() {
    cat > "$1" << 'LUA'
wrk.method = "POST"
wrk.body = '{"model":"auto","messages":[{"role":"user","content":"hi"}]}'
wrk.headers["Content-Type"] = "application/json"
LUA
}

# Gives state directory `dir` one API key for `provider`, with `failover`.
add_key() {
    local failover=$1 dir=$2 provider=$3
    echo k | "$failover" --state-dir "$dir" profiles add "$provider:a" > "$dir.add.log" 2>&1 \
        || { cat "$dir.add.log" >&2; exit 1; }
}

# Writes to `file` a config whose one chain is one model at `upstream`.
one_model_config() {
    cat > "$1" << CONFIG
{ agents: { defaults: { model: { primary: "openai/gpt-x" } } },
  models: { providers: { openai: { baseUrl: "$2/v1", api: "openai-chat" } } } }
CONFIG
}

# Makes the scratch directory `work` and the list `pids` of the processes
# a script starts; when the script exits, every one of them is stopped and
# `work` removed (after `keep_work` runs, when the script defines one).
start_work() {
    work=$(mktemp -d)
    pids=()
    trap stop_work EXIT
}

stop_work() {
    for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
    if declare -F keep_work > /dev/null; then keep_work; fi
    rm -rf "$work"
}

# Starts the benchmark's upstream role (`bench`, from `processes_bench`)
# and sets `upstream` to its URL.
start_upstream() {
    "$bench" --role upstream > "$work/upstream.log" 2>&1 &
    pids+=($!)
    upstream=http://$(address_in "$work/upstream.log" "listening on ")
}

# Starts the floor proxy in front of `upstream` and sets `floor_pid` and
# `floor` (its address).
start_floor() {
    "$bench" --role floor "$upstream" > "$work/floor.log" 2>&1 &
    pids+=($!)
    floor_pid=${pids[-1]}
    floor=$(address_in "$work/floor.log" "listening on ")
}

# Starts `failover serve` of binary `$2` on state directory `$3` (given an
# `openai` key first) with config `$4`, logging to `$work/$1.log`, and sets
# `gateway_pid` and `gateway` (its address).
start_gateway() {
    local label=$1 binary=$2 state=$3 config=$4
    add_key "$binary" "$state" openai
    FAILOVER_LOG=warn "$binary" --state-dir "$state" --config "$config" \
        serve --listen 127.0.0.1:0 > "$work/$label.log" 2>&1 &
    pids+=($!)
    gateway_pid=${pids[-1]}
    gateway=$(address_in "$work/$label.log" "serving on http://")
}
