#!/usr/bin/env bash
# Builds an A/B bench set for the GPU host (which has no Rust): DEST/{base,new}/{main,hit_latency,hit_loop}
# (the criterion binary of cl-benches and cl-pool's hit_latency and hit_loop examples, release), the run scripts
# pool.sh and calls.sh beside them, and the ICD loader .deb.
# base: BASE_COMMIT (default 9ad71cd, the build before this round) in a worktree under /tmp, built
#       with today's hit_latency.rs so both sides time the same loop;
# new:  the checkout given as $1 (default: this repository), its own target/.
# Usage: cargo xtask device-bundle && bash tools/ab/build.sh [NEW_CHECKOUT] [DEST=.devrun/ab]
# then on the GPU machine (device runner, carry [".devrun"]): OUT=$OUT bash .devrun/ab/pool.sh and
# OUT=$OUT bash .devrun/ab/calls.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
NEW=${1:-$root}
DEST=${2:-$root/.devrun/ab}
BASE_COMMIT=${BASE_COMMIT:-9ad71cd}
BASE_WT=/tmp/ab-base-$BASE_COMMIT
BASE_TARGET=/tmp/ab-base-target

if [ ! -d "$BASE_WT" ]; then
  git -C "$root" worktree add --detach "$BASE_WT" "$BASE_COMMIT"
fi
# Today's example source over the base library (restored from git after the build); where the
# pool's API changed since the base, BASE_EXAMPLE_REV names the last commit whose hit_latency.rs
# (the same timed loops) still builds against the base.
if [ -n "${BASE_EXAMPLE_REV:-}" ]; then
  git -C "$root" show "$BASE_EXAMPLE_REV:crates/cl-pool/examples/hit_latency.rs" \
    > "$BASE_WT/crates/cl-pool/examples/hit_latency.rs"
else
  cp "$NEW/crates/cl-pool/examples/hit_latency.rs" "$BASE_WT/crates/cl-pool/examples/hit_latency.rs"
fi

# hit_loop's source uses no pool API newer than 9ad71cd: today's on both sides (HIT_LOOP_REV
# names an older source for an older base; a base without hit_loop.rs gets none).
git -C "$root" show "${HIT_LOOP_REV:-HEAD}:crates/cl-pool/examples/hit_loop.rs" \
  > "$BASE_WT/crates/cl-pool/examples/hit_loop.rs"

# $1 worktree, $2 target dir, $3 out dir
build_set() {
  local wt=$1 target=$2 out=$3
  mkdir -p "$out"
  ( cd "$wt"
    CARGO_TARGET_DIR=$target cargo build -q --release -p cl-pool --example hit_latency --example hit_loop
    cp "$target/release/examples/hit_latency" "$target/release/examples/hit_loop" "$out/"
    # The criterion binary: the one `bench` executable cargo reports for cl-benches.
    local exe
    exe=$(CARGO_TARGET_DIR=$target cargo bench -q -p cl-benches --no-run --message-format=json 2>/dev/null \
      | python3 -c 'import json,sys
for l in sys.stdin:
    try: m = json.loads(l)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])' | tail -n 1)
    [ -x "$exe" ] || { echo "no criterion binary for $wt" >&2; exit 1; }
    cp "$exe" "$out/main" )
  ( cd "$wt" && echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates benches || echo '+dirty')" ) > "$out/commit.txt"
}

build_set "$BASE_WT" "$BASE_TARGET" "$DEST/base"
git -C "$BASE_WT" checkout -q -- crates/cl-pool/examples/hit_latency.rs
git -C "$BASE_WT" checkout -q -- crates/cl-pool/examples/hit_loop.rs 2>/dev/null \
  || rm -f "$BASE_WT/crates/cl-pool/examples/hit_loop.rs"
build_set "$NEW" "$NEW/target" "$DEST/new"
cp "$root/tools/ab/pool.sh" "$root/tools/ab/calls.sh" "$root/tools/ab/medians.py" "$DEST/"
cp "$root"/.devrun/ocl-icd-libopencl1_*.deb "$DEST/" 2>/dev/null || echo "note: no ICD loader .deb in .devrun (run cargo xtask device-bundle first)"
ls -la "$DEST" "$DEST/base" "$DEST/new"
cat "$DEST/base/commit.txt" "$DEST/new/commit.txt"
