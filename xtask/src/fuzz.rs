//! `cargo xtask fuzz [--seconds N] [TARGET]...`: a time-bounded libFuzzer run of every fuzz
//! target (`fuzz/fuzz_targets/*.rs`) in turn, with a table of executions per target.
//!
//! cargo-fuzz needs a nightly toolchain and `cargo install cargo-fuzz`; where either is missing
//! the command says so and succeeds without fuzzing (CI runs the same properties on stable
//! through `cl-props`' tests, so nothing depends on this step). New corpus entries go to the
//! git-ignored `target/fuzz-corpus/<target>/`; the committed seeds in `fuzz/corpus/<target>/` are
//! read, never written. A crash fails the command and names the artifact to turn into a
//! regression test (docs/TESTING.md, "Fuzzing").

use std::fs;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::util::{self, Result};

/// The options of `cargo xtask fuzz`.
#[derive(Debug)]
struct Options {
    seconds: u64,
    targets: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options {
        seconds: 30,
        targets: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                o.seconds = v.parse().map_err(|e| format!("--seconds {v}: {e}"))?;
            }
            t if !t.starts_with('-') => o.targets.push(t.to_owned()),
            other => return Err(format!("unknown option `{other}`").into()),
        }
    }
    Ok(o)
}

/// The targets: the file stems of `fuzz/fuzz_targets/`, sorted.
fn all_targets() -> Result<Vec<String>> {
    let dir = util::root().join("fuzz/fuzz_targets");
    let mut out: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "rs").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    out.sort();
    Ok(out)
}

/// `cargo +nightly ...` through the rustup proxy, without the variables `cargo run` set for
/// xtask (they name the pinned stable toolchain).
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly").current_dir(util::root());
    for var in ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN"] {
        cmd.env_remove(var);
    }
    cmd
}

/// Why fuzzing cannot run here, if it cannot.
fn missing_tools() -> Option<&'static str> {
    let quiet = |mut cmd: Command| {
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut version = nightly_cargo();
    version.arg("--version");
    if !quiet(version) {
        return Some("no nightly toolchain (rustup toolchain install nightly)");
    }
    let mut fuzz = nightly_cargo();
    fuzz.args(["fuzz", "--version"]);
    if !quiet(fuzz) {
        return Some("cargo-fuzz is not installed (cargo install cargo-fuzz)");
    }
    None
}

/// `stat::number_of_executed_units: N` from libFuzzer's final statistics.
fn executions(log: &str) -> Option<u64> {
    log.lines()
        .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs the fuzz command.
pub(crate) fn run(args: &[String]) -> Result {
    let o = parse(args)?;
    if let Some(why) = missing_tools() {
        println!("cargo xtask fuzz: skipped: {why}");
        return Ok(());
    }
    let targets = if o.targets.is_empty() {
        all_targets()?
    } else {
        o.targets
    };
    // One build for every target (sanitizer off: the targets call safe arithmetic and parsers;
    // libFuzzer's overflow checks stay on, and throughput doubles).
    let mut build = nightly_cargo();
    build.args(["fuzz", "build", "-s", "none"]);
    util::run(&mut build)?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for t in &targets {
        let scratch = util::root().join("target/fuzz-corpus").join(t);
        fs::create_dir_all(&scratch)?;
        let seeds = util::root().join("fuzz/corpus").join(t);
        let mut cmd = nightly_cargo();
        cmd.args(["fuzz", "run", "-s", "none", t])
            .arg(&scratch)
            .arg(&seeds)
            .args([
                "--",
                &format!("-max_total_time={}", o.seconds),
                "-max_len=8192",
                "-timeout=10",
                "-print_final_stats=1",
            ]);
        println!("  $ {}", util::show(&cmd));
        let start = Instant::now();
        let out = cmd
            .output()
            .map_err(|e| format!("cannot start `{}`: {e}", util::show(&cmd)))?;
        let log = String::from_utf8_lossy(&out.stderr);
        let execs = executions(&log).map_or_else(|| "?".to_owned(), |n| n.to_string());
        let result = if out.status.success() {
            "ok".to_owned()
        } else {
            let artifact = log
                .lines()
                .find(|l| l.contains("Test unit written to"))
                .unwrap_or("no artifact line");
            failed.push(t.clone());
            eprintln!("{log}");
            format!("FAILED ({artifact})")
        };
        rows.push(format!(
            "| {t} | {} | {execs} | {result} |",
            util::secs(start.elapsed())
        ));
    }
    println!("\n| target | time | executions | result |\n| --- | --- | --- | --- |");
    for r in &rows {
        println!("{r}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets failed: {} (reproduce: cargo +nightly fuzz run -s none <target> <artifact>)",
            failed.join(", ")
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_default_to_thirty_seconds_of_every_target() {
        let o = parse(&[]).unwrap();
        assert_eq!((o.seconds, o.targets.len()), (30, 0));
        let o = parse(&["--seconds".into(), "5".into(), "rect".into()]).unwrap();
        assert_eq!((o.seconds, o.targets), (5, vec!["rect".to_owned()]));
        assert!(parse(&["--seconds".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
    }

    #[test]
    fn executions_come_from_the_final_statistics() {
        let log = "#1000\tDONE\nstat::number_of_executed_units: 123456\nstat::peak_rss_mb: 40\n";
        assert_eq!(executions(log), Some(123_456));
        assert_eq!(executions("crashed"), None);
    }

    #[test]
    fn every_fuzz_target_has_a_corpus_and_a_property_module() {
        let targets = all_targets().unwrap();
        assert_eq!(targets.len(), 6, "{targets:?}");
        for t in targets {
            assert!(util::root().join("fuzz/corpus").join(&t).is_dir(), "{t}");
            assert!(
                util::root()
                    .join("props/src")
                    .join(format!("{t}.rs"))
                    .is_file(),
                "{t}"
            );
        }
    }
}
