#!/usr/bin/env bash
# Pool speed, base against new (tools/ab/build.sh), side by side in one lease on the GPU host.
# Device runner, carry [".devrun"]: OUT=$OUT bash .devrun/ab/pool.sh   # or: bash pool.sh BASE_DIR NEW_DIR
# Knobs: ALT (hit_loop rounds, 15), MODES (hit_loop modes, "device owned local"), CROUNDS (criterion rounds, 3).
# About 4 minutes: hit_loop alternated (ALT rounds), criterion (device hit + 3 host hits, 1 s warm-up + 2 s each, 3 rounds
# alternated, pinned to one core), then hit_latency twice each, alternated (1-16 threads, caches
# on and off). Logs in $OUT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BASE=${1:-$here/base}
NEW=${2:-$here/new}
OUT=${OUT:-$here/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/pool.log") 2>&1

# The ICD loader from the bundled .deb, and the NVIDIA ICD (as .devrun/run.sh does).
if ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1 '; then
  rm -rf /tmp/ocl && mkdir -p /tmp/ocl
  for deb in "$here"/ocl-icd-libopencl1_*.deb; do [ -e "$deb" ] && dpkg -x "$deb" /tmp/ocl; done
  export LD_LIBRARY_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
mkdir -p /etc/OpenCL/vendors 2>/dev/null
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
  for c in /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1; do
    if [ -e "$c" ]; then echo "$c" > /etc/OpenCL/vendors/nvidia.icd; break; fi
  done
fi
export CL_TEST=${CL_TEST:-nvidia}
nproc; lscpu 2>/dev/null | grep -E 'Model name|^CPU MHz|max MHz' || true
echo "base: $(cat "$BASE/commit.txt" 2>/dev/null)  new: $(cat "$NEW/commit.txt" 2>/dev/null)"

CORE=${CORE:-5}
# hit_loop (one hit + free a loop, the same source on both sides): many short runs, base and new
# alternated, pinned to one core, so that both sides see the same clock speed in each pair; the
# median of the per-round ratios is the figure (the host's clock moves between runs).
ALT=${ALT:-15}
for r in $(seq 1 "$ALT"); do
  for mode in ${MODES:-device owned local}; do
    for v in base new; do
      dir=$BASE; [ $v = new ] && dir=$NEW
      ns=$(timeout 60 taskset -c "$CORE" "$dir/hit_loop" "$mode" 10000000 2>/dev/null | sed -n 's/.* hit: \([0-9.]*\) ns/\1/p')
      echo "$v $r hit_loop/$mode ${ns:-nan} ns" | tee -a "$OUT/hit_loop.txt"
    done
  done
done
python3 "$here/medians.py" "$OUT/hit_loop.txt" 2>/dev/null || true

FILTER='^pool_hit_alloc_free/1024$|^pool_host/(hit_repeated_size|hit_local|hit_mixed_sizes)$'
for round in $(seq 1 "${CROUNDS:-3}"); do
  for v in base new; do
    dir=$BASE; [ $v = new ] && dir=$NEW
    echo "== criterion round $round: $v"
    CRITERION_HOME="$OUT/criterion-$v" timeout 120 taskset -c "$CORE" "$dir/main" --bench "$FILTER" \
      --warm-up-time 1 --measurement-time 2 --noplot 2>&1 \
      | grep -E '^(pool_|cl-benches)|time:' | tee -a "$OUT/criterion-$v.txt"
  done
done

for round in 1 2; do
  for v in base new; do
    dir=$BASE; [ $v = new ] && dir=$NEW
    echo "== hit_latency round $round: $v"
    timeout 150 "$dir/hit_latency" 2>&1 | tee "$OUT/hit_latency-$v-$round.txt"
  done
done

# One line per criterion bench: the median estimate of each round, base then new.
# Criterion's middle estimate per round (`base|new ROUND NAME VALUE UNIT`, as hit_loop.txt), then
# medians and the median of the per-round ratios. Two runs' criterion.txt files concatenated, the
# second's rounds renumbered (awk '{$2 += 100} 1'), give the figures of both together.
echo "== summary (criterion)"
for v in base new; do
  awk -v v=$v '/^pool_/{name=$1} /time:/{print v, ++r[name], name, $(NF-3), $(NF-2)}' "$OUT/criterion-$v.txt"
done | tee "$OUT/criterion.txt"
python3 "$here/medians.py" "$OUT/criterion.txt" 2>/dev/null || true
echo "pool.sh: done (logs in $OUT)"
