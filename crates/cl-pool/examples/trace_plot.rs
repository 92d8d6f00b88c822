//! Writes SVG plots of managed / active bytes over a trace replayed under PyOpenCL's policy and
//! under a capped policy, and the same replays as PyTorch memory-viewer snapshots (JSON).
//!
//! `cargo run --release -p cl-pool --example trace_plot -- [TRACE.jsonl] [OUT_DIR]`: without a
//! trace file, RMM's random_allocations shape is used.

use std::error::Error;
use std::path::PathBuf;

use cl_pool::trace::{
    from_json_lines, pytorch_snapshot, random_trace, replay_with_timeline, timeline_svg,
    RandomTraceShape, ReplayConfig,
};
use cl_pool::{Eviction, Policy};

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let trace = match args.next() {
        Some(path) if path.ends_with(".jsonl") => from_json_lines(&std::fs::read_to_string(path)?)?,
        _ => random_trace(&RandomTraceShape::default()),
    };
    let out = PathBuf::from(args.next().unwrap_or_else(|| "target".to_owned()));
    let peak_active = {
        let (r, _) = replay_with_timeline(&trace, &ReplayConfig::default())?;
        r.peak_active_bytes
    };
    let runs = [
        ("pyopencl", Policy::default()),
        (
            "capped",
            Policy {
                managed_bytes_limit: Some(peak_active / 4 * 5),
                larger_bins: 8,
                eviction: Eviction::FullestBinFirst,
                ..Policy::default()
            },
        ),
    ];
    for (name, policy) in runs {
        let (r, t) = replay_with_timeline(
            &trace,
            &ReplayConfig {
                policy,
                ..ReplayConfig::default()
            },
        )?;
        let title = format!(
            "{name}: peak managed / peak active {:.2}, hit rate {:.1} %",
            r.managed_to_active_at_peak(),
            100.0 * r.hit_rate()
        );
        let path = out.join(format!("pool-{name}.svg"));
        std::fs::write(&path, timeline_svg(&t, &title))?;
        println!("{}: {title}", path.display());
        let snap = pytorch_snapshot(
            &trace,
            &ReplayConfig {
                policy,
                ..ReplayConfig::default()
            },
        )?;
        let path = out.join(format!("pool-{name}.snapshot.json"));
        std::fs::write(&path, serde_json::to_string(&snap)?)?;
        println!("{}: PyTorch memory-viewer snapshot (JSON)", path.display());
    }
    Ok(())
}
