#!/usr/bin/env bash
# Criterion per-call, kernel-enqueue, transfer and pool-hit benches, base and new (tools/ab/build.sh),
# two alternated rounds pinned to one core, in one lease. Run it after .devrun/run.sh (or pool.sh),
# which unpack the ICD loader into /tmp/ocl. Medians: python3 tools/ab/medians.py $OUT/calls.txt
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$here/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/tmp/ocl/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CL_TEST=${CL_TEST:-nvidia}
F='^(enqueue_kernel|enqueue_fill)/(16|256)$|^(write|read|copy|fill|map|rect)/(4|4096|1048576|67108864)$|^pool_hit_alloc_free/1024$|^pool_host/hit_local$'
for round in 1 2; do for v in base new; do
  echo "== round $round $v"
  CRITERION_HOME="$OUT/c-$v" timeout 200 taskset -c 5 "$here/$v/main" --bench "$F" --warm-up-time 0.5 --measurement-time 1 --noplot 2>&1 \
    | awk -v v=$v -v r=$round '/^[a-z_]+\/[0-9a-z_]+/{name=$1} /time:/{print v, r, name, $(NF-3), $(NF-2)}' >> "$OUT/calls.txt"
done; done
echo "calls.sh: done"
