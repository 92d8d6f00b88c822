//! Writes SVG plots of managed / active bytes over a trace replayed under PyOpenCL's policy and
//! under a capped policy, and the same replays as PyTorch memory-viewer snapshots (JSON).
//!
//! `cargo run --release -p cl-pool --example trace_plot -- [TRACE.jsonl] [OUT_DIR]`: without a
//! trace file, RMM's random_allocations shape is used.

use std::error::Error;
use std::path::PathBuf;

use cl_pool::trace::{from_json_lines, replay, ReplayConfig};
use cl_pool::{Eviction, Policy};

mod support;
use support::{
    capped_policy, pytorch_snapshot, random_trace, ratio, timeline_svg, RandomTraceShape,
};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let trace = match args.next() {
        Some(path) if path.ends_with(".jsonl") => from_json_lines(&std::fs::read_to_string(path)?)?,
        _ => random_trace(&RandomTraceShape::default()),
    };
    let out = PathBuf::from(args.next().unwrap_or_else(|| "target".to_owned()));
    let peak_active = { replay(&trace, &ReplayConfig::default())?.peak_active_bytes };
    let runs = [
        ("pyopencl", Policy::default()),
        (
            "capped",
            capped_policy(peak_active, 8, Eviction::FullestBinFirst),
        ),
    ];
    for (name, policy) in runs {
        let config = ReplayConfig {
            policy,
            ..ReplayConfig::default()
        };
        // The plot's replay records the timeline; the snapshot replays the same configuration.
        let r = replay(
            &trace,
            &ReplayConfig {
                timeline: true,
                ..config
            },
        )?;
        let title = format!(
            "{name}: peak managed / peak active {:.2}, hit rate {:.1} %",
            ratio(r.peak_managed_bytes as u64, r.peak_active_bytes as u64),
            100.0 * ratio(r.hits, r.requests)
        );
        let path = out.join(format!("pool-{name}.svg"));
        std::fs::write(&path, timeline_svg(&r.timeline, &title))?;
        println!("{}: {title}", path.display());
        let snap = pytorch_snapshot(&trace, &config)?;
        let path = out.join(format!("pool-{name}.snapshot.json"));
        std::fs::write(&path, serde_json::to_string(&snap)?)?;
        println!("{}: PyTorch memory-viewer snapshot (JSON)", path.display());
    }
    Ok(())
}
