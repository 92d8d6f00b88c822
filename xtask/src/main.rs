//! `cargo xtask`: the workspace's automation (set-up of the OpenCL runtimes, the per-device test matrix,
//! CI, benches, the device report and the GPU-machine bundle).
//!
//! Architecture invariant: xtask depends on no `cl-*` crate, so it builds on a machine without libOpenCL;
//! whatever needs OpenCL it runs as a separate binary (`cl-tests`' `device_tests` and `cl-devices`,
//! `cl-characterize`'s `cl-report`).

mod bench;
mod bundle;
mod ci;
mod devices;
mod examples;
mod fuzz;
mod matrix;
mod outcomes;
mod report;
mod setup;
mod util;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  setup                       install + register PoCL, Oclgrind and the Intel CPU runtime (idempotent)
  devices [--clinfo]          list OpenCL platforms and devices with versions (--clinfo: from clinfo,
                              without building the cl-devices binary)
  test-devices [--device SELECTOR]... [--timeout SECS] [--no-host] [--record-outcomes] [-- <test args>]
                              host tests, then the device suites once per selected device, each in
                              its own process; prints the per-device matrix
  ci                          fmt --check, clippy -D warnings, docs -D warnings, host tests, package,
                              test-devices, examples on every device
  package                     cargo package (verified) of the four library crates, no test fixtures
  bench                       criterion benches + PyOpenCL's reference timings into target/bench-report/
  report                      the device characterization report (falls back to `devices`)
  examples                    build the user-facing examples and run each on every device
  device-bundle               build .devrun/ for a machine with a GPU and no Rust (see .devrun/run.sh)
  fuzz [--seconds N] [TARGET]...
                              run each fuzz target (fuzz/) for N seconds (default 30) with
                              cargo-fuzz on nightly; skipped with a notice where either is missing

SELECTOR uses the CL_TEST / PYOPENCL_TEST grammar, e.g. `port`, `intel`, `0:0`, `port:pthread;oclgrind`.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((cmd, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let res = match cmd.as_str() {
        "setup" => no_args(rest).and_then(|()| setup::run()),
        "devices" => devices::run(rest),
        "test-devices" => matrix::Options::parse(rest).and_then(|o| matrix::run(&o)),
        "ci" => no_args(rest).and_then(|()| ci::run()),
        "package" => no_args(rest).and_then(|()| ci::package().map(|s| println!("packaged: {s}"))),
        "bench" => bench::run(rest),
        "report" => report::run(rest),
        "device-bundle" => no_args(rest).and_then(|()| bundle::run()),
        "examples" => no_args(rest).and_then(|()| examples::run()),
        "fuzz" => fuzz::run(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n\n{USAGE}").into()),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\nerror: {e}");
            ExitCode::FAILURE
        }
    }
}

fn no_args(rest: &[String]) -> util::Result {
    match rest.first() {
        None => Ok(()),
        Some(a) => Err(format!("unexpected argument `{a}`\n\n{USAGE}").into()),
    }
}
