#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ with seeds: the repository's own test cases
# and examples (provider errors, header blocks, messages, traces, configs)
# and the hand-written seeds in fuzz/seeds/. Run from anywhere; the fuzzer
# adds what it finds to the same directories.
set -euo pipefail
cd "$(dirname "$0")"
root=..
for target in classify guest_readers trace_reader sse_decoder openai_request openai_reply anthropic_request config; do
  mkdir -p "corpus/$target"
  if [ -d "seeds/$target" ]; then cp seeds/"$target"/* "corpus/$target/"; fi
done
python3 - "$root" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1])
corpus = pathlib.Path("corpus")

errors = []
for path in sorted((root / "tests/cases").glob("classify*.jsonl")):
    for line in path.read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            errors.append(case.get("input", case))
for line in (root / "examples/errors.jsonl").read_text().splitlines():
    if line.strip():
        errors.append(json.loads(line))
for n, error in enumerate(errors):
    error = {k: v for k, v in error.items() if k not in ("expected", "name", "source")}
    (corpus / "classify" / f"case-{n:04}.json").write_text(json.dumps(error))
    headers = error.get("headers") or {}
    block = ""
    if isinstance(headers, dict) and headers:
        block = "".join(f"{k}: {v}\n" for k, v in headers.items())
        (corpus / "guest_readers" / f"headers-{n:04}.txt").write_text(block)
    message = error.get("message")
    if isinstance(message, str):
        (corpus / "guest_readers" / f"message-{n:04}.txt").write_text(message)
for path in sorted((root / "examples/traces").glob("*.jsonl")):
    if not path.name.endswith(".expected.jsonl"):
        (corpus / "trace_reader" / path.name).write_text(path.read_text())
(corpus / "config" / "starter.json5").write_text((root / "host/cli/src/cli/starter.json5").read_text())
PY
for target in corpus/*; do echo "$(ls "$target" | wc -l) seeds in $target"; done
