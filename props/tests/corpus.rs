//! Every file of `fuzz/corpus/<target>/` through its target's check: the seeds and every crash the
//! fuzzers found (kept as regressions), on the stable toolchain, in CI.

use std::fs;
use std::path::Path;

#[test]
fn every_corpus_file_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut total = 0;
    for (target, check) in cl_props::TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no seeds for target {target}");
        for path in files {
            let data = fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| check(&data));
            assert!(result.is_ok(), "{target}: {} fails", path.display());
            total += 1;
        }
    }
    eprintln!("{total} corpus inputs passed");
}

#[test]
fn the_corpus_stays_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut bytes = 0;
    for (target, _) in cl_props::TARGETS {
        for e in fs::read_dir(root.join(target)).unwrap() {
            bytes += e.unwrap().metadata().unwrap().len();
        }
    }
    assert!(
        bytes < 200 * 1024,
        "fuzz/corpus holds {bytes} bytes: minimise it (cargo fuzz cmin)"
    );
}
