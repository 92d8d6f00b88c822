//! Module-structure invariants (docs/ARCHITECTURE.md, "Module structure"), read from the source
//! files of `cl-mem` and `cl-pool`, no OpenCL needed:
//!
//! - no import circle of more than two files in either crate (a module and its helper may know
//!   each other; three or more modules that all reach each other cannot be understood one at a
//!   time);
//! - cl-mem's `runtime/` names no memory module: kernels reach the memory behind their arguments
//!   only through `crate::runtime::track`'s `ArgMemory` seam, typed (no `dyn Any`, no downcast).
//!
//! An edge is any `crate::a::b` path (or `super::`/`self::` path) outside comments and outside the
//! `#[cfg(test)] mod tests` block, resolved to the longest module path that is a file; a parent
//! module naming its own children (declarations, re-exports) is structure, not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

fn modules(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("readable source dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("under root");
                let mut name = rel.with_extension("").to_string_lossy().replace('/', "::");
                if name == "lib" {
                    name = String::new();
                } else if let Some(parent) = name.strip_suffix("::mod") {
                    name = parent.to_owned();
                }
                out.insert(name, fs::read_to_string(&path).expect("readable source"));
            }
        }
    }
    out
}

/// The source without line comments and without the unit-test module.
fn code_of(src: &str) -> String {
    let src = src.split("#[cfg(test)]\nmod tests").next().unwrap_or(src);
    src.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths after `prefix` (`crate::`, `super::`, `self::`), as `a::b::c`.
fn paths_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    code.match_indices(prefix).filter_map(move |(i, _)| {
        if i > 0 {
            let before = code.as_bytes()[i - 1];
            if before.is_ascii_alphanumeric() || before == b'_' {
                return None;
            }
        }
        let rest = &code[i + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(':');
        (!path.is_empty()).then(|| path.to_owned())
    })
}

fn resolve(path: &str, mods: &BTreeMap<String, String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| mods.contains_key(m))
}

fn graph(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, src) in mods {
        let code = code_of(src);
        let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
        let mut out = BTreeSet::new();
        let joined = |base: &str, p: &str| {
            if base.is_empty() {
                p.to_owned()
            } else {
                format!("{base}::{p}")
            }
        };
        for p in paths_after(&code, "crate::") {
            out.extend(resolve(&p, mods));
        }
        for p in paths_after(&code, "super::") {
            out.extend(resolve(&joined(parent, &p), mods));
        }
        for p in paths_after(&code, "self::") {
            out.extend(resolve(&joined(m, &p), mods));
        }
        out.remove(m);
        out.remove("");
        // A parent module declares and re-exports its children: structure, not a dependency.
        let own = format!("{m}::");
        out.retain(|t| !t.starts_with(&own));
        edges.insert(m.clone(), out);
    }
    edges
}

/// Strongly connected components (Tarjan), each sorted.
fn components(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The modules of workspace crate `krate` (`crates/<krate>/src`).
fn src(krate: &str) -> BTreeMap<String, String> {
    modules(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates")
            .join(krate)
            .join("src"),
    )
}

fn circles_of_more_than_two(krate: &str) -> Vec<Vec<String>> {
    let mods = src(krate);
    assert!(mods.len() > 5, "{krate}: sources not found");
    components(&graph(&mods))
        .into_iter()
        .filter(|c| c.len() > 2)
        .collect()
}

#[test]
fn cl_mem_has_no_import_circle_of_more_than_two_files() {
    let big = circles_of_more_than_two("cl-mem");
    assert!(big.is_empty(), "cl-mem import circles: {big:?}");
}

#[test]
fn cl_pool_has_no_import_circle_of_more_than_two_files() {
    let big = circles_of_more_than_two("cl-pool");
    assert!(big.is_empty(), "cl-pool import circles: {big:?}");
}

#[test]
fn runtime_reaches_memory_only_through_the_track_seam() {
    let mods = src("cl-mem");
    let edges = graph(&mods);
    // What runtime/ may name besides itself: errors, plain data and the raw-handle trait.
    let allowed = ["error", "pod", "mem_type", "raw_handle"];
    let mut wrong = Vec::new();
    for (m, out) in &edges {
        if !m.starts_with("runtime") {
            continue;
        }
        for t in out {
            if !(t.starts_with("runtime") || allowed.contains(&t.as_str())) {
                wrong.push(format!("{m} -> {t}"));
            }
        }
    }
    assert!(wrong.is_empty(), "runtime/ names memory modules: {wrong:?}");
    // The seam itself is what the kernel uses, and it names no memory kind.
    for t in &edges["runtime::track"] {
        assert!(
            t.starts_with("runtime") || t == "error" || t == "raw_handle",
            "track names {t}: the seam must not know memory kinds"
        );
    }
}

#[test]
fn kernels_reach_memory_without_a_downcast() {
    // The seam is typed (`KeepAlive`, `ArgMemory`): no `dyn Any` on the kernel path.
    let mods = src("cl-mem");
    for m in ["runtime::kernel", "runtime::track"] {
        let code = code_of(&mods[m]);
        assert!(
            !["std::any", "dyn Any", "downcast"]
                .iter()
                .any(|w| code.contains(w)),
            "{m} reaches memory through a downcast"
        );
    }
}

#[test]
fn the_checker_sees_a_circle() {
    // A three-module circle, to show the checker is not vacuous.
    let mut mods = BTreeMap::new();
    mods.insert("a".to_owned(), "use crate::b::X;".to_owned());
    mods.insert("b".to_owned(), "use crate::c::Y;".to_owned());
    mods.insert(
        "c".to_owned(),
        "fn f() { crate::a::z(); } // crate::b".to_owned(),
    );
    let comps = components(&graph(&mods));
    assert!(comps.iter().any(|c| c.len() == 3), "{comps:?}");
}

#[test]
fn cl_mem_modules_never_name_the_crate_root() {
    // lib.rs only declares and re-exports; a module that took a re-export (`crate::Buffer`)
    // would import from the top of the crate, an arrow back up over every layer.
    let mut wrong = Vec::new();
    for (m, src) in src("cl-mem") {
        if m.is_empty() {
            continue;
        }
        let code = code_of(&src);
        for path in paths_after(&code, "crate::") {
            if path.starts_with(|c: char| c.is_ascii_uppercase()) || path.is_empty() {
                wrong.push(format!("{m}: crate::{path}"));
            }
        }
        if code.contains("use crate::{") {
            wrong.push(format!("{m}: use crate::{{..}}"));
        }
    }
    assert!(wrong.is_empty(), "modules naming the crate root: {wrong:?}");
}
