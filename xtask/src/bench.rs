//! `cargo xtask bench`: the criterion benches (`cl-benches`) and PyOpenCL's own timings
//! (`../shared/tools/pyopencl-reference --bench`, when present), side by side in `target/bench-report/`.
//!
//! Matching convention: a criterion benchmark `<group>/<bytes>` lines up with PyOpenCL's key
//! `<group>_ns_<bytes>` (e.g. `raw_buffer_create_release/1024` and `raw_buffer_create_release_ns_1024`).
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

    let tool = root.join("../shared/tools/pyopencl-reference");
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

    let md = side_by_side(&rust, reference.as_ref());
    std::fs::write(dir.join("report.md"), &md)?;
    println!("\n{md}\nwritten to {}", dir.display());
    Ok(())
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
}
