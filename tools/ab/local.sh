#!/usr/bin/env bash
# Wall clock of hit_loop builds on this machine, alternated so that every build sees the same
# clock speed and load in each round: ROUNDS rounds of each mode, each build pinned to one core,
# then per mode the median ns of each build and the median of its per-round ratio to the first.
# (The VM's figures in docs/PERFORMANCE.md "Why: store-forwarding stalls" come from this, 7-9
# rounds.) Build a base with tools/ab/build.sh (DEST/base/hit_loop) or any checkout.
# Usage: [MODES="device owned local latency"] [CORE=1] [CL_TEST=pocl] bash tools/ab/local.sh ROUNDS BIN...
set -euo pipefail
rounds=$1; shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for mode in ${MODES:-device owned local}; do
    for b in "$@"; do
      ns=$(CL_TEST=${CL_TEST:-pocl} taskset -c "${CORE:-1}" "$b" "$mode" 3000000 2>/dev/null \
        | sed -n 's/.* hit: \([0-9.]*\) ns/\1/p')
      echo "$b $r $mode ${ns:-nan}" >> "$out"
    done
  done
done
python3 - "$out" "$@" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    b, r, mode, v = line.split()
    runs[mode][r][b] = float(v)
bins = sys.argv[2:]
for mode, by_round in runs.items():
    cells = []
    for b in bins:
        med = statistics.median(x[b] for x in by_round.values())
        ratio = statistics.median(x[b] / x[bins[0]] for x in by_round.values())
        cells.append(f"{b}: {med:.1f} ns ({ratio:.2f})")
    print(mode, " | ".join(cells))
PY
