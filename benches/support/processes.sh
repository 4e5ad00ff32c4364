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
