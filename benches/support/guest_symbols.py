#!/usr/bin/env python3
"""Names the policy guest's compiled functions in a callgrind profile.

Callgrind sees the code wasmtime compiles as anonymous addresses
(`???:0x...`). Run the profiled program with FAILOVER_PERF_MAP=1 and
wasmtime writes /tmp/perf-<pid>.map, the address and size of every
compiled function; this joins the two and prints each function's own
instructions divided by a count (calls, requests), largest first:

    FAILOVER_PERF_MAP=1 FAILOVER_BENCH_ONLY=component valgrind --tool=callgrind \\
        --toggle-collect='classify::counted' --callgrind-out-file=cg.out \\
        target/release/deps/classify-<hash> --bench
    benches/support/guest_symbols.py cg.out /tmp/perf-<pid>.map 184000

Host functions keep the names callgrind gives them. Rust symbol hashes
are dropped so two builds' profiles compare by name.
"""

import bisect
import re
import signal
import subprocess
import sys

HASH = re.compile(r"17h[0-9a-f]{16}E$")
LINE = re.compile(r"\s*([\d,]+) \([^)]*\)\s+(\S.*)$")
ANONYMOUS = re.compile(r"\?\?\?:0x([0-9a-f]+)")


def read_map(path):
    entries = []
    with open(path) as lines:
        for line in lines:
            start, size, name = line.split(" ", 2)
            entries.append((int(start, 16), int(size, 16), HASH.sub("", name.strip())))
    entries.sort()
    return entries


def main():
    # Piped into `head`: stop quietly when it has read enough.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) != 4:
        sys.exit(f"usage: {sys.argv[0]} CALLGRIND_OUT PERF_MAP DIVISOR")
    profile, perf_map, divisor = sys.argv[1], sys.argv[2], float(sys.argv[3])
    entries = read_map(perf_map)
    starts = [entry[0] for entry in entries]
    annotated = subprocess.run(
        ["callgrind_annotate", "--threshold=100", profile],
        capture_output=True, text=True, check=True,
    ).stdout
    totals = {}
    for line in annotated.splitlines():
        match = LINE.match(line)
        if not match or "PROGRAM TOTALS" in line:
            continue
        count, name = int(match.group(1).replace(",", "")), match.group(2)
        anonymous = ANONYMOUS.match(name)
        if anonymous:
            address = int(anonymous.group(1), 16)
            at = bisect.bisect_right(starts, address) - 1
            inside = at >= 0 and address < entries[at][0] + entries[at][1]
            name = "guest " + (entries[at][2] if inside else hex(address))
        else:
            name = "host  " + re.sub(r"\s*\[.*\]$", "", name)
        totals[name] = totals.get(name, 0) + count
    for name, count in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{count / divisor:9.0f}  {name}")


if __name__ == "__main__":
    main()
