#!/usr/bin/env bash
# Creates the Python venv with the official OpenAI and Anthropic SDKs that
# the SDK tests (tests/sdk.rs) drive the gateway with, and componentize-py,
# which builds the Python policy (tests/policy/python.rs). Idempotent: an
# up-to-date venv is left as it is.
#
#   tests/sdk/setup.sh            -> target/sdk-venv
#   FAILOVER_SDK_VENV=DIR tests/sdk/setup.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${FAILOVER_SDK_VENV:-$here/../../target/sdk-venv}"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$here/requirements.txt" "$stamp"; then
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
cp "$here/requirements.txt" "$stamp"
echo "SDK venv ready: $venv"
