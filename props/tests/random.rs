//! Seeded pseudo-random inputs through every target's check, on the stable toolchain: random
//! byte strings, and mutations of the corpus seeds (so the JSON targets see near-valid text).
//! Deterministic (fixed seeds), a few seconds in a debug build.
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]

use std::fs;
use std::path::Path;

use cl_props::input::SplitMix;

/// Inputs per target: random bytes and as many mutations of seeds.
const RANDOM: usize = 1500;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|p| fs::read(p).unwrap()).collect()
}

fn run(target: &str, seed: u64) {
    let (_, check) = cl_props::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap();
    let mut rng = SplitMix::new(seed);
    let corpus = seeds(target);
    for i in 0..RANDOM {
        let len = rng.below(96);
        let random = rng.bytes(len);
        let pick = rng.below(corpus.len());
        let mutated = rng.mutate(&corpus[pick]);
        for data in [random, mutated] {
            let result = std::panic::catch_unwind(|| check(&data));
            assert!(
                result.is_ok(),
                "{target}: input {i} (seed {seed:#x}) fails: {data:?}"
            );
        }
    }
}

#[test]
fn select_holds_on_random_inputs() {
    run("select", 0x5e1ec7);
}

#[test]
fn trace_holds_on_random_inputs() {
    run("trace", 0x7ace);
}

#[test]
fn conflict_holds_on_random_inputs() {
    run("conflict", 0xba4c);
}

#[test]
fn profile_holds_on_random_inputs() {
    run("profile", 0x940f11e);
}

#[test]
fn rect_holds_on_random_inputs() {
    run("rect", 0x4ec7);
}

#[test]
fn image_holds_on_random_inputs() {
    run("image", 0x1a6e);
}
