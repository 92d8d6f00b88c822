//! The record of which tests skip and which fail as known driver bugs, per local runtime
//! (`tests/expected-outcomes.txt`): a full `test-devices` run compares each device's skips and
//! expected failures with it, so a broken capability query that turns tests into skips, or a skip
//! that silently stopped happening, is reported and fails the run. `--record-outcomes` rewrites
//! the record from the devices just run.
//!
//! Format, one line per test: `<runtime> skip|xfail <suite::test>`; `#` starts a comment. The
//! runtime key is [`runtime_key`] of the platform name; only the local runtimes (PoCL, Oclgrind,
//! the Intel CPU runtime) are checked, since only they run under xtask.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util;

/// The local runtimes whose outcomes are recorded.
pub(crate) const CHECKED: &[&str] = &["oclgrind", "pocl", "intel-cpu"];

/// Tests whose skipping depends on the machine, not the device (PyOpenCL installable from PyPI,
/// `tools/` of the checkout): left out of the record, and reported on their own
/// line by the matrix instead.
pub(crate) const ENVIRONMENT_DEPENDENT: &[&str] =
    &["characterize::matches_pyopencl_reference_output"];

/// The record's file.
pub(crate) fn record_path() -> PathBuf {
    util::root().join("tests/expected-outcomes.txt")
}

/// A short, stable key for a platform name.
pub(crate) fn runtime_key(platform: &str) -> String {
    let p = platform.to_lowercase();
    if p.contains("oclgrind") {
        "oclgrind".into()
    } else if p.contains("portable computing language") {
        "pocl".into()
    } else if p.contains("intel") {
        "intel-cpu".into()
    } else if p.contains("nvidia") {
        "nvidia".into()
    } else {
        p.split_whitespace().collect::<Vec<_>>().join("-")
    }
}

/// `(kind, test)` pairs of one runtime in the record (kind: `skip` or `xfail`).
pub(crate) fn recorded(text: &str, key: &str) -> BTreeSet<(String, String)> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            match (it.next(), it.next(), it.next()) {
                (Some(k), Some(kind), Some(test)) if k == key => {
                    Some((kind.to_owned(), test.to_owned()))
                }
                _ => None,
            }
        })
        .collect()
}

/// `(kind, test)` pairs of a device's harness summary, with each one's message.
pub(crate) fn observed(json: &Path) -> Option<Vec<(String, String, String)>> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).ok()?).ok()?;
    let mut out = Vec::new();
    for d in v["devices"].as_array()? {
        for t in d["tests"].as_array()? {
            let kind = match t["outcome"].as_str() {
                Some("skipped") => "skip",
                Some("expected_failure") => "xfail",
                _ => continue,
            };
            let name = t["name"].as_str().unwrap_or("").to_owned();
            if ENVIRONMENT_DEPENDENT.contains(&name.as_str()) {
                continue;
            }
            let msg = t["message"]
                .as_str()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .to_owned();
            out.push((kind.to_owned(), name, msg));
        }
    }
    Some(out)
}

/// Differences between the record and what a device showed: (`+` new / `-` vanished, kind, test,
/// message).
pub(crate) fn compare(
    record: &BTreeSet<(String, String)>,
    seen: &[(String, String, String)],
) -> Vec<String> {
    let seen_set: BTreeSet<(String, String)> = seen
        .iter()
        .map(|(k, t, _)| (k.clone(), t.clone()))
        .collect();
    let mut diffs = Vec::new();
    for (k, t, m) in seen {
        if !record.contains(&(k.clone(), t.clone())) {
            diffs.push(format!("new {k}: {t} ({m})"));
        }
    }
    for (k, t) in record {
        if !seen_set.contains(&(k.clone(), t.clone())) {
            diffs.push(format!("vanished {k}: {t} (recorded, not seen)"));
        }
    }
    diffs
}

/// Rewrites the record's lines of `key` with `seen`, keeping every other runtime's lines.
pub(crate) fn rewrite(text: &str, key: &str, seen: &[(String, String, String)]) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| {
            let body = l.split('#').next().unwrap_or("").trim();
            body.split_whitespace().next() != Some(key)
        })
        .map(str::to_owned)
        .collect();
    lines.extend(seen.iter().map(|(k, t, _)| format!("{key} {k} {t}")));
    // Comments first, then the records sorted: a rewrite changes only the lines that changed.
    let (mut comments, mut records): (Vec<String>, Vec<String>) = lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .partition(|l| l.trim_start().starts_with('#'));
    records.sort();
    records.dedup();
    comments.extend(records);
    let mut out = comments.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_and_stable() {
        assert_eq!(runtime_key("Portable Computing Language"), "pocl");
        assert_eq!(runtime_key("Intel(R) OpenCL"), "intel-cpu");
        assert_eq!(runtime_key("Oclgrind"), "oclgrind");
        assert_eq!(runtime_key("NVIDIA CUDA"), "nvidia");
    }

    #[test]
    fn differences_go_both_ways_and_rewrites_keep_other_runtimes() {
        let text = "# comment\npocl skip a::x\npocl xfail a::y\noclgrind skip a::z\n";
        let rec = recorded(text, "pocl");
        assert_eq!(rec.len(), 2);
        let seen = vec![
            ("skip".to_owned(), "a::x".to_owned(), "why".to_owned()),
            ("skip".to_owned(), "a::new".to_owned(), "no SVM".to_owned()),
        ];
        let d = compare(&rec, &seen);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().any(|l| l.starts_with("new skip: a::new")));
        assert!(d.iter().any(|l| l.starts_with("vanished xfail: a::y")));
        let out = rewrite(text, "pocl", &seen);
        assert!(out.contains("oclgrind skip a::z"));
        assert!(out.contains("pocl skip a::new") && !out.contains("a::y"));
        assert!(compare(&recorded(&out, "pocl"), &seen).is_empty());
    }
}
