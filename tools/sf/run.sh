#!/usr/bin/env bash
# Store-forwarding failures of a loop: runs BIN ARGS... under valgrind's lackey (memory trace)
# and counts the loads that cannot be forwarded (tools/sf/store_forwarding.py). Deterministic,
# unlike the VM's clock, and needs no performance counters. Divide by the iterations in the
# trace's middle (a loop of N iterations: about as many as the loop's own loads / loads per
# iteration), or compare two builds on the same loop.
# Example: cargo build --release -p cl-pool --example hit_loop &&
#          CL_TEST=pocl bash tools/sf/run.sh target/release/examples/hit_loop owned 3000
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
valgrind --tool=lackey --trace-mem=yes --log-file="$trace" "$@" >/dev/null 2>&1
python3 "$here/store_forwarding.py" "$trace" 48 "$(stat -c %s "$1")"
