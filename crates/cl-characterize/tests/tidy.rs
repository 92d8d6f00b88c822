//! Architecture invariants of this crate, checked on its sources (see docs/ARCHITECTURE.md).

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `[dependencies]` table of Cargo.toml, as lines.
fn dependencies() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            out.push(line.to_owned());
        }
    }
    out
}

#[test]
fn default_build_needs_no_opencl_and_probe_needs_only_cl_raw() {
    let deps = dependencies();
    let cl: Vec<&String> = deps.iter().filter(|d| d.starts_with("cl-")).collect();
    assert_eq!(
        cl,
        [
            &"cl-raw = { workspace = true, optional = true }".to_owned(),
            &"cl-mem = { workspace = true, optional = true }".to_owned()
        ],
        "cl-characterize may depend on cl-raw (feature probe) and cl-mem (feature cl-mem, for the \
         safe `probe::profile`) only, and only optionally"
    );
    let text = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let probe = text
        .lines()
        .find(|l| l.starts_with("probe = "))
        .expect("a probe feature");
    assert!(probe.contains("\"dep:cl-raw\""), "{probe}");
    let others: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("dep:cl-raw") && !l.starts_with("probe = "))
        .collect();
    assert!(others.is_empty(), "only `probe` enables cl-raw: {others:?}");
    let mem: Vec<&str> = text.lines().filter(|l| l.contains("dep:cl-mem")).collect();
    assert_eq!(
        mem,
        ["cl-mem = [\"probe\", \"dep:cl-mem\"]"],
        "only the `cl-mem` feature (over `probe`) enables cl-mem"
    );
}

#[test]
fn unsafe_code_only_in_the_probe_module() {
    let mut offenders = Vec::new();
    let mut stack = vec![root().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.file_name().is_some_and(|n| n == "probe.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("unsafe {")
                    || code.contains("unsafe fn")
                    || code.contains("unsafe impl")
                {
                    offenders.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe outside probe.rs: {offenders:?}"
    );
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("lib.rs");
    assert!(lib.contains("#![cfg_attr(not(feature = \"probe\"), forbid(unsafe_code))]"));
}
