//! Tidy test of the workspace's architecture invariants that can be read off the manifests and
//! sources (docs/ARCHITECTURE.md, "Architecture invariants"; shared/docs/house-style.md, "What may
//! depend on what"). cl-characterize checks its own rules in its tests/tidy.rs. This lives in xtask
//! because xtask builds without libOpenCL, so these checks run on any machine.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// The `[dependencies]`, `[dev-dependencies]` and `[build-dependencies]` names of a manifest
/// (table headers such as `[dependencies.foo]` included), without a TOML parser: the manifests
/// here use one `name = ...` or `name.workspace = true` line per dependency.
fn dependencies(manifest: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(manifest).expect("manifest readable");
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_owned();
            if let Some(dep) = section
                .strip_prefix("dependencies.")
                .or_else(|| section.strip_prefix("dev-dependencies."))
            {
                out.push((section.clone(), dep.to_owned()));
            }
            continue;
        }
        let in_deps = matches!(
            section.as_str(),
            "dependencies" | "dev-dependencies" | "build-dependencies"
        ) || section.starts_with("target.");
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line
                .split(['=', '.'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned();
            out.push((section.clone(), name));
        }
    }
    out
}

fn members() -> Vec<(String, PathBuf)> {
    let r = root();
    [
        ("cl-raw", "crates/cl-raw"),
        ("cl-mem", "crates/cl-mem"),
        ("cl-pool", "crates/cl-pool"),
        ("cl-characterize", "crates/cl-characterize"),
        ("cl-tests", "tests"),
        ("cl-benches", "benches"),
        ("xtask", "xtask"),
    ]
    .into_iter()
    .map(|(n, p)| (n.to_owned(), r.join(p)))
    .collect()
}

fn deps_of(name: &str) -> Vec<String> {
    let (_, dir) = members()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("known member");
    dependencies(&dir.join("Cargo.toml"))
        .into_iter()
        .map(|(_, d)| d)
        .collect()
}

#[test]
fn the_manifest_reader_sees_real_dependencies() {
    // Guards the other checks against a reader that silently finds nothing.
    assert!(deps_of("cl-mem").iter().any(|d| d == "cl-raw"));
    assert!(deps_of("cl-pool").iter().any(|d| d == "cl-mem"));
    assert!(deps_of("cl-raw").iter().any(|d| d == "cl-sys"));
}

#[test]
fn only_cl_raw_names_cl_sys() {
    for (name, _) in members() {
        let has = deps_of(&name).iter().any(|d| d == "cl-sys");
        assert_eq!(has, name == "cl-raw", "{name} and cl-sys");
    }
}

#[test]
fn xtask_depends_on_no_cl_crate() {
    let cl: Vec<_> = deps_of("xtask")
        .into_iter()
        .filter(|d| d.starts_with("cl-"))
        .collect();
    assert!(cl.is_empty(), "xtask must build without libOpenCL: {cl:?}");
}

#[test]
fn nothing_depends_on_the_test_and_bench_packages() {
    for (name, _) in members() {
        for d in deps_of(&name) {
            assert!(
                d != "cl-tests" && d != "cl-benches",
                "{name} depends on {d}"
            );
        }
    }
}

#[test]
fn cl_mem_does_not_depend_on_cl_characterize() {
    // Memory objects must not change behaviour because of a heuristic guess.
    assert!(!deps_of("cl-mem").iter().any(|d| d == "cl-characterize"));
    // cl-raw sits at the bottom: cl-sys only.
    assert!(!deps_of("cl-raw")
        .iter()
        .any(|d| d.starts_with("cl-") && d != "cl-sys"));
}

#[test]
fn cl_pool_forbids_unsafe_code() {
    // The compiler enforces the attribute; this keeps it from being loosened: the root forbids
    // unsafe code and no file of cl-pool says `unsafe` or allows it.
    let src = root().join("crates/cl-pool/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    assert!(
        lib.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"),
        "cl-pool's root must keep #![forbid(unsafe_code)]"
    );
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("source");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                assert!(
                    !code
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == "unsafe" || w == "unsafe_code" && code.contains("allow")),
                    "`unsafe` in cl-pool: {}:{}: {}",
                    p.display(),
                    i + 1,
                    line.trim()
                );
            }
        }
    }
}

/// Driver quirks are decided in one place (docs/ARCHITECTURE.md; issue 33): no code line of
/// cl-mem or cl-pool outside `runtime/quirks.rs` compares a platform name.
#[test]
fn platform_names_are_read_only_in_the_quirks_module() {
    let names = [
        "\"Portable Computing Language",
        "\"NVIDIA",
        "\"Oclgrind",
        "\"Intel",
    ];
    let mut offenders = Vec::new();
    let mut stack = vec![
        root().join("crates/cl-mem/src"),
        root().join("crates/cl-pool/src"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("source dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.ends_with("runtime/quirks.rs") || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source readable");
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                if names.iter().any(|name| code.contains(name)) {
                    offenders.push(format!("{}:{}: {}", path.display(), n + 1, code));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "platform names outside runtime/quirks.rs:\n{}",
        offenders.join("\n")
    );
}
