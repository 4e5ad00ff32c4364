#!/usr/bin/env bash
# Creates the Python venv with the official OpenAI and Anthropic SDKs that
# the SDK tests (tests/sdk.rs) drive the gateway with, and componentize-py,
# which builds the Python policy (tests/policy/python.rs). Idempotent: an
# up-to-date venv is left as it is. A venv's scripts name its own path, so
# one that was moved (a target directory carried to another clone) is made
# again.
#
#   tests/sdk/setup.sh            -> target/sdk-venv
#   FAILOVER_SDK_VENV=DIR tests/sdk/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${FAILOVER_SDK_VENV:-$here/../../target/sdk-venv}"
mkdir -p "$venv"
venv="$(cd "$venv" && pwd)"
stamp="$venv/.requirements"
# What a ready venv holds: the requirements it was made from, and where.
expected() {
    cat "$here/requirements.txt"
    echo "# venv: $venv"
}
if [ -x "$venv/bin/python" ] && cmp -s <(expected) "$stamp"; then
    exit 0
fi
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
expected > "$stamp"
echo "SDK venv ready: $venv"
