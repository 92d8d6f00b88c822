//! `cargo xtask bench`: the criterion benches (`cl-benches`) and PyOpenCL's own timings
//! (`tools/pyopencl-reference --bench`, when present), side by side in `target/bench-report/`.
//!
//! Matching convention: a criterion benchmark `<group>/<bytes>` lines up with PyOpenCL's key
//! `<group>_ns_<bytes>` (e.g. `raw_buffer_create_release/1024` and `raw_buffer_create_release_ns_1024`).
//! Transfers are compared in GB/s (1e9 bytes/s) in a second table, by [`TRANSFERS`]: `write/<bytes>`
//! against `h2d_GBps_<bytes>`, `read/<bytes>` against `d2h_GBps_<bytes>`, `copy/<bytes>` against
//! `d2d_GBps_rw_<bytes>` (both directions counted, so twice the bytes per copy) and
//! `host_memcpy/<bytes>` against `host_memcpy_GBps_<bytes>`; the raw-loop (`write_raw`, `read_raw`,
//! `copy_raw`) and pinned (`write_pinned`, `read_pinned`) rows are set against the same PyOpenCL
//! key for context.
//! Files written: `rust.txt` (criterion's output), `rust.json` (mean ns per benchmark),
//! `pyopencl.json` (the reference tool's output), `report.md` (the side-by-side table).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::util::{self, Result};

/// Runs both bench sets; extra arguments go to `cargo bench` (after `--`, criterion's filter).
pub(crate) fn run(args: &[String]) -> Result {
    crate::setup::ensure_platform()?;
    let root = util::root();
    let dir = root.join("target/bench-report");
    std::fs::create_dir_all(&dir)?;

    println!("==> cargo bench -p cl-benches");
    let mut cmd = util::cargo();
    cmd.args(["bench", "-p", "cl-benches"]);
    if !args.is_empty() {
        cmd.arg("--").args(args);
    }
    println!("  $ {}", util::show(&cmd));
    // Only benchmarks this run measured: target/criterion keeps every earlier run's results too.
    let started = std::time::SystemTime::now();
    let out = cmd.stderr(Stdio::inherit()).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    std::fs::write(dir.join("rust.txt"), text.as_bytes())?;
    if !out.status.success() {
        return Err("cargo bench failed".into());
    }
    let rust = criterion_means(&root.join("target/criterion"), started);
    std::fs::write(dir.join("rust.json"), serde_json::to_string_pretty(&rust)?)?;

    let tool = root.join("tools/pyopencl-reference");
    let reference = if tool.is_file() {
        println!("==> {} --bench", tool.display());
        let out = std::process::Command::new(&tool)
            .arg("--bench")
            .stderr(Stdio::inherit())
            .output()?;
        std::fs::write(dir.join("pyopencl.json"), &out.stdout)?;
        if out.status.success() {
            serde_json::from_slice::<Value>(&out.stdout).ok()
        } else {
            eprintln!(
                "pyopencl-reference failed ({}): the report has the Rust side only",
                out.status
            );
            None
        }
    } else {
        println!("(no {}: the report has the Rust side only)", tool.display());
        None
    };

    let mut md = side_by_side(&rust, reference.as_ref());
    md.push_str(&transfers_side_by_side(&rust, reference.as_ref()));
    md.push_str(&pool_policies(&dir)?);
    std::fs::write(dir.join("report.md"), &md)?;
    println!("\n{md}\nwritten to {}", dir.display());
    Ok(())
}

/// Issue 8's pool-policy figures: replays of RMM's random_allocations trace shape under PyOpenCL's
/// policy and capped ones (cl-pool's `policy_explore` example, which names the trace's seed and
/// shape), and the managed / active plots plus PyTorch-viewer snapshots (`trace_plot`) written into
/// `dir`. xtask cannot link cl-pool (it must build without libOpenCL), so it runs the examples.
fn pool_policies(dir: &Path) -> Result<String> {
    println!("==> pool policies over a recorded-shape trace (cl-pool examples)");
    let mut cmd = util::cargo();
    cmd.args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "cl-pool",
        "--example",
        "policy_explore",
    ]);
    println!("  $ {}", util::show(&cmd));
    let out = cmd.stderr(Stdio::inherit()).output()?;
    if !out.status.success() {
        return Err("cl-pool example policy_explore failed".into());
    }
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut plot = util::cargo();
    plot.args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "cl-pool",
        "--example",
        "trace_plot",
        "--",
    ]);
    plot.arg("random").arg(dir);
    println!("  $ {}", util::show(&plot));
    if !plot.status()?.success() {
        return Err("cl-pool example trace_plot failed".into());
    }
    Ok(format!(
        "\n## Pool policies (RMM random_allocations shape, cl-pool `policy_explore`)\n\n{table}\n\
         Plots and PyTorch memory-viewer snapshots of the same replays: `{}`.\n",
        dir.display()
    ))
}

/// Mean time (ns) of every benchmark criterion wrote results for since `since`, keyed `group/param`.
fn criterion_means(dir: &Path, since: std::time::SystemTime) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    walk(dir, dir, since, &mut out);
    out
}

fn walk(base: &Path, dir: &Path, since: std::time::SystemTime, out: &mut BTreeMap<String, f64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_dir() {
            continue;
        }
        if e.file_name() == "new" {
            let est = p.join("estimates.json");
            let fresh = std::fs::metadata(&est)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            if !fresh {
                continue;
            }
            let mean = std::fs::read_to_string(&est)
                .ok()
                .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                .and_then(|v| v["mean"]["point_estimate"].as_f64());
            if let (Some(mean), Some(parent)) = (mean, dir.strip_prefix(base).ok()) {
                out.insert(parent.to_string_lossy().into_owned(), mean);
            }
        } else if e.file_name() != "report" && e.file_name() != "base" && e.file_name() != "change"
        {
            walk(base, &p, since, out);
        }
    }
}

fn side_by_side(rust: &BTreeMap<String, f64>, reference: Option<&Value>) -> String {
    let devices: Vec<&Value> = reference
        .and_then(|r| r["devices"].as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut md = String::from("# Bench report: cl-benches vs PyOpenCL\n\n");
    let selection = std::env::var("CL_TEST").or_else(|_| std::env::var("PYOPENCL_TEST"));
    md.push_str(&format!(
        "Rust: criterion mean on the bench device, the first one that the selection ({}) picks. ",
        selection.map_or_else(
            |_| "unset: the first device".to_owned(),
            |s| format!("`{s}`")
        )
    ));
    md.push_str(
        "PyOpenCL: `pyopencl-reference --bench`, per device. Times in ns per operation.\n\n",
    );
    md.push_str("| benchmark | Rust (ns) |");
    for d in &devices {
        let name = d["char"]["name"].as_str().unwrap_or("?");
        let plat = d["char"]["platform"].as_str().unwrap_or("?");
        md.push_str(&format!(" PyOpenCL {plat}/{name} |"));
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(devices.len()));
    md.push('\n');
    for (id, mean) in rust {
        md.push_str(&format!("| {id} | {mean:.0} |"));
        let key = id
            .rsplit_once('/')
            .map(|(g, p)| format!("{}_ns_{p}", g.replace('/', "_")));
        for d in &devices {
            let v = key.as_ref().and_then(|k| d["bench"][k.as_str()].as_f64());
            md.push_str(&v.map_or_else(|| " - |".to_owned(), |v| format!(" {v:.0} |")));
        }
        md.push('\n');
    }
    md
}

/// Criterion transfer groups, the PyOpenCL key prefix each is compared with, and the bytes moved
/// per byte of payload (2 for a device-to-device copy: PyOpenCL's `d2d_GBps_rw` counts the read and
/// the write).
const TRANSFERS: &[(&str, &str, f64)] = &[
    ("write", "h2d_GBps", 1.0),
    ("write_plain", "h2d_GBps", 1.0),
    ("write_staged", "h2d_GBps", 1.0),
    ("write_raw", "h2d_GBps", 1.0),
    ("write_pinned", "h2d_GBps", 1.0),
    ("read", "d2h_GBps", 1.0),
    ("read_plain", "d2h_GBps", 1.0),
    ("read_staged", "d2h_GBps", 1.0),
    ("read_raw", "d2h_GBps", 1.0),
    ("read_pinned", "d2h_GBps", 1.0),
    ("copy", "d2d_GBps_rw", 2.0),
    ("copy_raw", "d2d_GBps_rw", 2.0),
    ("host_memcpy", "host_memcpy_GBps", 1.0),
];

/// A criterion transfer benchmark (`<group>/<bytes>`) as (Rust GB/s, PyOpenCL key), if it is one.
fn transfer_rate(id: &str, mean_ns: f64) -> Option<(f64, String)> {
    let (group, bytes) = id.rsplit_once('/')?;
    let n: u64 = bytes.parse().ok()?;
    let &(_, prefix, factor) = TRANSFERS.iter().find(|(g, _, _)| *g == group)?;
    if mean_ns <= 0.0 {
        return None;
    }
    // Bytes per nanosecond is GB/s (1e9 bytes/s).
    #[expect(
        clippy::cast_precision_loss,
        reason = "transfer sizes stay far below 2^52 bytes"
    )]
    let gbps = n as f64 * factor / mean_ns;
    Some((gbps, format!("{prefix}_{bytes}")))
}

/// GB/s with two decimals, four below 0.1 (tiny transfers would all read 0.00).
fn gbps_text(v: f64) -> String {
    if v < 0.1 {
        format!("{v:.4}")
    } else {
        format!("{v:.2}")
    }
}

/// The transfer table: GB/s of each criterion transfer row and, per PyOpenCL device, its GB/s and
/// the ratio Rust / PyOpenCL. Empty when the run measured no transfer.
fn transfers_side_by_side(rust: &BTreeMap<String, f64>, reference: Option<&Value>) -> String {
    let mut rows: Vec<(usize, u64, &str, f64, String)> = rust
        .iter()
        .filter_map(|(id, &mean)| {
            let (gbps, key) = transfer_rate(id, mean)?;
            let (group, bytes) = id.rsplit_once('/')?;
            let order = TRANSFERS.iter().position(|(g, _, _)| *g == group)?;
            Some((order, bytes.parse().ok()?, id.as_str(), gbps, key))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    rows.sort_by_key(|r| (r.1, r.0));
    let devices: Vec<&Value> = reference
        .and_then(|r| r["devices"].as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut md = String::from(
        "\n## Transfers (GB/s = 1e9 bytes/s; a copy counts both directions)\n\n\
         `write`, `read`, `copy` and `host_memcpy` match PyOpenCL's measurement; `_raw` rows are \
         the same call through the raw C API, `_pinned` rows use pinned host memory, both set \
         against the same PyOpenCL key for context. Ratio = Rust / PyOpenCL (above 1: Rust is \
         faster).\n\n| benchmark | Rust (GB/s) | PyOpenCL key |",
    );
    for d in &devices {
        let name = d["char"]["name"].as_str().unwrap_or("?");
        let plat = d["char"]["platform"].as_str().unwrap_or("?");
        md.push_str(&format!(" PyOpenCL {plat}/{name} (GB/s) | ratio |"));
    }
    md.push_str("\n|---|---|---|");
    md.push_str(&"---|---|".repeat(devices.len()));
    md.push('\n');
    for (_, _, id, gbps, key) in rows {
        md.push_str(&format!("| {id} | {} | `{key}` |", gbps_text(gbps)));
        for d in &devices {
            match d["bench"][key.as_str()].as_f64() {
                Some(py) if py > 0.0 => {
                    md.push_str(&format!(" {} | {:.2}x |", gbps_text(py), gbps / py));
                }
                _ => md.push_str(" - | - |"),
            }
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_by_side_matches_group_and_size_to_pyopencl_keys() {
        let rust = BTreeMap::from([("raw_buffer_create_release/1024".to_owned(), 1500.0)]);
        let reference = serde_json::json!({"devices": [{
            "char": {"name": "AMD EPYC", "platform": "Intel(R) OpenCL"},
            "bench": {"raw_buffer_create_release_ns_1024": 2500.4}
        }]});
        let md = side_by_side(&rust, Some(&reference));
        assert!(md.contains("PyOpenCL Intel(R) OpenCL/AMD EPYC"), "{md}");
        assert!(
            md.contains("| raw_buffer_create_release/1024 | 1500 | 2500 |"),
            "{md}"
        );
        let alone = side_by_side(&rust, None);
        assert!(
            alone.contains("| raw_buffer_create_release/1024 | 1500 |\n"),
            "{alone}"
        );
    }

    #[test]
    fn transfers_are_compared_in_gbps_with_pyopencls_keys() {
        // 1 MiB in 262144 ns = 4.0 GB/s; a copy of 1 MiB in 524288 ns moves 2 MiB: 4.0 GB/s too.
        let rust = BTreeMap::from([
            ("write/1048576".to_owned(), 262_144.0),
            ("write_raw/1048576".to_owned(), 209_715.2),
            ("write_pinned/1048576".to_owned(), 104_857.6),
            ("read/1048576".to_owned(), 524_288.0),
            ("copy/1048576".to_owned(), 524_288.0),
            ("host_memcpy/1048576".to_owned(), 104_857.6),
            ("read/4".to_owned(), 1600.0),
            ("raw_buffer_create_release/1024".to_owned(), 1500.0),
        ]);
        let reference = serde_json::json!({"devices": [{
            "char": {"name": "AMD EPYC", "platform": "Intel(R) OpenCL"},
            "bench": {
                "h2d_GBps_1048576": 2.0,
                "d2h_GBps_1048576": 4.0,
                "d2d_GBps_rw_1048576": 8.0,
                "raw_buffer_create_release_ns_1024": 2500.0
            }
        }]});
        let md = transfers_side_by_side(&rust, Some(&reference));
        assert!(
            md.contains("PyOpenCL Intel(R) OpenCL/AMD EPYC (GB/s) | ratio |"),
            "{md}"
        );
        for row in [
            "| write/1048576 | 4.00 | `h2d_GBps_1048576` | 2.00 | 2.00x |",
            "| write_raw/1048576 | 5.00 | `h2d_GBps_1048576` | 2.00 | 2.50x |",
            "| write_pinned/1048576 | 10.00 | `h2d_GBps_1048576` | 2.00 | 5.00x |",
            "| read/1048576 | 2.00 | `d2h_GBps_1048576` | 4.00 | 0.50x |",
            "| copy/1048576 | 4.00 | `d2d_GBps_rw_1048576` | 8.00 | 0.50x |",
            // No PyOpenCL value: a dash, no ratio.
            "| host_memcpy/1048576 | 10.00 | `host_memcpy_GBps_1048576` | - | - |",
            // 4 bytes in 1600 ns: four decimals below 0.1 GB/s.
            "| read/4 | 0.0025 | `d2h_GBps_4` | - | - |",
        ] {
            assert!(md.contains(row), "missing {row:?} in\n{md}");
        }
        // Rows by size, then in TRANSFERS order; ns benchmarks stay out of this table.
        let at = |row: &str| md.find(row).unwrap_or(usize::MAX);
        assert!(at("| read/4 |") < at("| write/1048576"), "{md}");
        assert!(at("| write/1048576") < at("| read/1048576"), "{md}");
        assert!(at("| read/1048576") < at("| copy/1048576"), "{md}");
        assert!(!md.contains("raw_buffer_create_release"), "{md}");
        // The ns table still matches its keys, and the Rust side alone still renders.
        assert!(side_by_side(&rust, Some(&reference))
            .contains("| raw_buffer_create_release/1024 | 1500 | 2500 |"));
        let alone = transfers_side_by_side(&rust, None);
        assert!(
            alone.contains("| copy/1048576 | 4.00 | `d2d_GBps_rw_1048576` |\n"),
            "{alone}"
        );
        assert!(transfers_side_by_side(&BTreeMap::new(), None).is_empty());
    }
}
