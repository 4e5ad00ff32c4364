#!/usr/bin/env bash
# Runs a command (the test suite) with a Redis server for the shared-state
# tests: installs redis-server from Debian's packages when it is missing,
# starts one on a free loopback port without persistence, exports its URL
# as FAILOVER_TEST_REDIS_URL (and the binary as FAILOVER_REDIS_SERVER, for
# tests that start, kill and restart their own), runs the command, and
# stops the server however the command ends.
set -euo pipefail

if ! command -v redis-server >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "with-redis.sh: redis-server is missing and apt-get is not here to install it" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "with-redis.sh: installing redis-server (Debian package)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >/dev/null
fi

for tool in redis-cli python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "with-redis.sh: $tool is needed (redis-cli comes with redis-server's package)" >&2
    exit 1
  fi
done

dir="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

for _ in $(seq 100); do
  if redis-cli -p "$port" ping >/dev/null 2>&1; then break; fi
  sleep 0.05
done
if ! redis-cli -p "$port" ping >/dev/null 2>&1 || ! kill -0 "$pid" 2>/dev/null; then
  echo "with-redis.sh: redis-server did not start on port $port; its log:" >&2
  cat "$dir/redis.log" >&2 || true
  exit 1
fi

export FAILOVER_TEST_REDIS_URL="redis://127.0.0.1:$port"
export FAILOVER_REDIS_SERVER="$(command -v redis-server)"
"$@"
