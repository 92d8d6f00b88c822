//! `cargo xtask test-devices`: the host-only tests, then the device suites once per selected device, each
//! device in its own process, and a closing matrix.
//!
//! Protocol with the harness (`cl-tests`' `device_tests` binary, see docs/TESTING.md):
//! - `device_tests --list-devices` prints one `device\t<platform index>\t<device index>\t<platform>\t<device>\t<version>`
//!   line per device that `CL_TEST` (or `PYOPENCL_TEST`) selects;
//! - each device then runs as `CL_TEST=<platform index>:<device index> device_tests --json <file> [test args]`
//!   (the selection grammar's index form pins exactly one device), with `CL_TEST_REQUIRE_DEVICES=1`;
//! - the JSON file holds the counts; a process that crashes or times out writes none, and its row says so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::outcomes;
use crate::setup;
use crate::util::{self, Ended, Result};

/// Default per-device limit: a hung driver must not stall the matrix forever.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Parsed `test-devices` arguments.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// `--device SELECTOR`, repeated; joined with `;` into `CL_TEST`.
    pub(crate) devices: Vec<String>,
    /// `--timeout SECS` per device.
    pub(crate) timeout: Option<Duration>,
    /// `--no-host`: skip the host-only tests.
    pub(crate) no_host: bool,
    /// `--record-outcomes`: rewrite `tests/expected-outcomes.txt` from this run's skips and
    /// expected failures instead of checking them.
    pub(crate) record_outcomes: bool,
    /// Everything after `--`, passed to the test binary (a name filter, `--exact`, ...).
    pub(crate) test_args: Vec<String>,
}

impl Options {
    /// Parses the arguments after `test-devices`.
    pub(crate) fn parse(args: &[String]) -> Result<Self> {
        let mut o = Options::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--device" | "-d" => o
                    .devices
                    .push(it.next().ok_or("--device needs a SELECTOR")?.clone()),
                "--timeout" => {
                    let v = it.next().ok_or("--timeout needs SECS")?;
                    let s: u64 = v
                        .parse()
                        .map_err(|_| format!("--timeout: `{v}` is not a number of seconds"))?;
                    o.timeout = Some(Duration::from_secs(s));
                }
                "--no-host" => o.no_host = true,
                "--record-outcomes" => o.record_outcomes = true,
                "--" => {
                    o.test_args = it.by_ref().cloned().collect();
                }
                s if s.starts_with("--device=") => {
                    o.devices.push(s["--device=".len()..].to_owned())
                }
                other => {
                    return Err(format!(
                        "test-devices: unexpected argument `{other}` (test args go after `--`)"
                    )
                    .into())
                }
            }
        }
        Ok(o)
    }
}

/// The host-only tests: every package's unit, integration and doc tests, except the device matrix target.
pub(crate) fn host_tests() -> Result {
    println!("==> host-only tests");
    // Devices are required here: host tests that probe live devices fail instead of noticing.
    util::run(
        util::cargo()
            .args(["test", "--workspace", "--exclude", "cl-tests"])
            .env("CL_TEST_REQUIRE_DEVICES", "1"),
    )?;
    util::run(util::cargo().args(["test", "-p", "cl-tests", "--lib", "--bins"]))?;
    util::run(util::cargo().args(["test", "-p", "cl-tests", "--doc"]))
}

/// Builds the device test binary once and returns its path.
pub(crate) fn build_device_tests(release: bool) -> Result<PathBuf> {
    build_device_tests_with(release, "")
}

/// As [`build_device_tests`], with cl-tests features (`"cuda"` for the GPU bundle).
pub(crate) fn build_device_tests_with(release: bool, features: &str) -> Result<PathBuf> {
    let mut cmd = util::cargo();
    cmd.args([
        "test",
        "-p",
        "cl-tests",
        "--test",
        "device_tests",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    if release {
        cmd.arg("--release");
    }
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    executable(&mut cmd, "device_tests")
}

/// Runs a `--message-format=json` cargo build and returns the executable of the target named `name`.
pub(crate) fn executable(cmd: &mut Command, name: &str) -> Result<PathBuf> {
    println!("  $ {}", util::show(cmd));
    let out = cmd.stderr(std::process::Stdio::inherit()).output()?;
    if !out.status.success() {
        return Err(format!("building `{name}` failed").into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == name)
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built no executable named `{name}`").into())
}

/// One selected device, as the harness lists it.
#[derive(Debug, Clone)]
struct Listed {
    platform_index: usize,
    device_index: usize,
    platform: String,
    device: String,
    version: String,
}

fn list_devices(bin: &Path, selection: Option<&str>) -> Result<Vec<Listed>> {
    let mut cmd = Command::new(bin);
    cmd.arg("--list-devices");
    if let Some(sel) = selection {
        cmd.env("CL_TEST", sel);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(stderr
            .trim()
            .trim_start_matches("error: ")
            .to_owned()
            .into());
    }
    let mut v: Vec<Listed> = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if let ["device", p, d, platform, device, version] = f[..] {
            let item = Listed {
                platform_index: p.parse()?,
                device_index: d.parse()?,
                platform: platform.to_owned(),
                device: device.to_owned(),
                version: version.to_owned(),
            };
            // The grammar keeps duplicates ("1:0,0"); one process per distinct device is enough.
            if !v.iter().any(|x| {
                (x.platform_index, x.device_index) == (item.platform_index, item.device_index)
            }) {
                v.push(item);
            }
        }
    }
    Ok(v)
}

/// The devices `selection` (else `CL_TEST`, else every device) picks, as
/// (platform index, device index, "device (platform)"), one entry per distinct device.
pub(crate) fn selected_devices(selection: Option<&str>) -> Result<Vec<(usize, usize, String)>> {
    let bin = build_device_tests(false)?;
    Ok(list_devices(&bin, selection)?
        .into_iter()
        .map(|l| {
            (
                l.platform_index,
                l.device_index,
                format!("{} ({})", l.device, l.platform),
            )
        })
        .collect())
}

/// One row of the matrix.
#[derive(Debug)]
struct Row {
    dev: Listed,
    counts: Option<[u64; 5]>,
    status: String,
    /// Why a device did not finish normally, printed under the table.
    note: Option<String>,
    /// The harness's summary file for this device.
    json: PathBuf,
    ok: bool,
    took: Duration,
}

/// Runs the matrix; an error if any device failed or none was selected.
pub(crate) fn run(o: &Options) -> Result {
    setup::ensure_platform()?;
    // A host-test failure does not stop the matrix: both results are worth seeing in one run.
    let host = if o.no_host { Ok(()) } else { host_tests() };
    let devices = device_matrix(o);
    match (host, devices) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(h), Ok(())) => {
            Err(format!("host tests failed ({h}); the device matrix passed").into())
        }
        (Ok(()), Err(d)) => Err(d),
        (Err(h), Err(d)) => Err(format!("host tests failed ({h}), and {d}").into()),
    }
}

/// The per-device part of [`run`].
pub(crate) fn device_matrix(o: &Options) -> Result {
    println!("==> device matrix");
    let bin = build_device_tests(false)?;
    let selection = (!o.devices.is_empty()).then(|| o.devices.join(";"));
    if let Some(s) = &selection {
        println!("  CL_TEST={s}");
    } else if let Some(s) = std::env::var("CL_TEST")
        .ok()
        .or_else(|| std::env::var("PYOPENCL_TEST").ok())
    {
        println!("  selection from the environment: {s}");
    }
    let devices = list_devices(&bin, selection.as_deref())?;
    if devices.is_empty() {
        return Err(
            "no OpenCL device selected: nothing was tested (see `cargo xtask devices`)".into(),
        );
    }
    let out_dir = util::root().join("target/test-devices");
    std::fs::create_dir_all(&out_dir)?;
    let limit = o.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let mut rows = Vec::new();
    for dev in devices {
        println!(
            "\n==> [{}/{}] ({}:{}, {})",
            dev.platform, dev.device, dev.platform_index, dev.device_index, dev.version
        );
        let json = out_dir.join(format!("{}-{}.json", dev.platform_index, dev.device_index));
        let _ = std::fs::remove_file(&json);
        let _ = std::fs::remove_file(current_file(&json));
        let mut cmd = Command::new(&bin);
        cmd.env(
            "CL_TEST",
            format!("{}:{}", dev.platform_index, dev.device_index),
        )
        .env("CL_TEST_REQUIRE_DEVICES", "1")
        .arg("--json")
        .arg(&json)
        .args(&o.test_args);
        let start = Instant::now();
        let ended = util::run_with_timeout(&mut cmd, limit)?;
        let took = start.elapsed();
        let counts = read_counts(&json);
        let aborted = read_aborted(&json);
        let (status, note, ok) = match (&ended, counts, aborted) {
            (Ended::TimedOut, _, _) => (
                "TIMED OUT".to_owned(),
                Some(format!("killed after {} (--timeout)", util::secs(limit))),
                false,
            ),
            (_, _, Some(why)) => ("ABORTED".to_owned(), Some(why), false),
            (Ended::Exited(s), Some(c), None) if s.success() && c[1] == 0 && c[4] == 0 => {
                ("ok".to_owned(), None, true)
            }
            (Ended::Exited(_), Some(_), None) => ("FAILED".to_owned(), None, false),
            (Ended::Exited(s), None, None) => (
                "CRASHED".to_owned(),
                Some(match running_test(&json) {
                    Some(t) => format!("{s} while running {t}"),
                    None => format!("{s}, no summary written"),
                }),
                false,
            ),
        };
        // Which tests skip and which fail as known bugs must match the record (full runs of the
        // local runtimes only: a filtered run sees a subset).
        let (status, note, ok) = match check_outcomes(o, &dev, &json, ok) {
            Some(diffs) if ok => (
                "OUTCOMES CHANGED".to_owned(),
                Some(format!(
                    "skips / expected failures differ from tests/expected-outcomes.txt \
                     (cargo xtask test-devices --record-outcomes rewrites it):\n    {}",
                    diffs.join("\n    ")
                )),
                false,
            ),
            _ => (status, note, ok),
        };
        rows.push(Row {
            dev,
            counts,
            status,
            note,
            json,
            ok,
            took,
        });
    }
    print_table(&rows);
    print_parity(&rows);
    let summary = out_dir.join("matrix.json");
    std::fs::write(&summary, serde_json::to_string_pretty(&matrix_json(&rows))?)?;
    println!(
        "  (per-device summaries and matrix.json in {})",
        out_dir.display()
    );
    let bad = rows.iter().filter(|r| !r.ok).count();
    if bad > 0 {
        Err(format!("{bad} of {} device(s) failed", rows.len()).into())
    } else {
        Ok(())
    }
}

/// Compares (or, with `--record-outcomes`, records) a device's skips and expected failures;
/// `Some(differences)` when they differ from the record.
fn check_outcomes(o: &Options, dev: &Listed, json: &Path, ran_ok: bool) -> Option<Vec<String>> {
    let key = outcomes::runtime_key(&dev.platform);
    if !o.test_args.is_empty() || !outcomes::CHECKED.contains(&key.as_str()) {
        return None;
    }
    let seen = outcomes::observed(json)?;
    let path = outcomes::record_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    if o.record_outcomes {
        if ran_ok {
            let new = outcomes::rewrite(&text, &key, &seen);
            if let Err(e) = std::fs::write(&path, new) {
                return Some(vec![format!("could not write {}: {e}", path.display())]);
            }
            println!(
                "  recorded {} outcome(s) of {key} in {}",
                seen.len(),
                path.display()
            );
        }
        return None;
    }
    let diffs = outcomes::compare(&outcomes::recorded(&text, &key), &seen);
    (!diffs.is_empty()).then_some(diffs)
}

/// Says, per device, whether the PyOpenCL parity test really compared every characterize key or
/// only skipped (PyOpenCL unavailable, device not in its output): a green matrix must not hide that.
fn print_parity(rows: &[Row]) {
    const TEST: &str = "characterize::matches_pyopencl_reference_output";
    println!("\nPyOpenCL parity ({TEST}):");
    for r in rows {
        let found = std::fs::read_to_string(&r.json)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| {
                v["devices"].as_array()?.iter().find_map(|d| {
                    d["tests"].as_array()?.iter().find_map(|t| {
                        (t["name"].as_str() == Some(TEST)).then(|| {
                            (
                                t["outcome"].as_str().unwrap_or("?").to_owned(),
                                t["message"]
                                    .as_str()
                                    .unwrap_or("")
                                    .lines()
                                    .next()
                                    .unwrap_or("")
                                    .to_owned(),
                            )
                        })
                    })
                })
            });
        let what = match found {
            Some((o, _)) if o == "passed" => "compared: every key identical".to_owned(),
            Some((o, m)) if o == "skipped" => format!("NOT compared ({m})"),
            Some((o, m)) => format!("{o}: {m}"),
            None => "not run".to_owned(),
        };
        println!("  [{}/{}] {what}", r.dev.platform, r.dev.device);
    }
}

/// The harness's `<summary>.current` file: the test running now (see `cl_tests` runner).
fn current_file(json: &Path) -> PathBuf {
    let mut p = json.as_os_str().to_owned();
    p.push(".current");
    PathBuf::from(p)
}

/// The test that was running when the process died, if the harness recorded it.
fn running_test(json: &Path) -> Option<String> {
    std::fs::read_to_string(current_file(json))
        .ok()
        .filter(|s| !s.is_empty())
}

/// Why the harness stopped early (its watchdog caught a test that never returned), if it did.
fn read_aborted(path: &Path) -> Option<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["aborted"].as_str().map(str::to_owned)
}

/// `[passed, failed, skipped, expected failures, unexpected passes]` from the harness's JSON summary.
fn read_counts(path: &Path) -> Option<[u64; 5]> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let t = &v["totals"];
    let n = |k: &str| t[k].as_u64();
    Some([
        n("passed")?,
        n("failed")?,
        n("skipped")?,
        n("expected_failures")?,
        n("unexpected_passes")?,
    ])
}

/// The matrix as JSON (`target/test-devices/matrix.json`), one object per device.
fn matrix_json(rows: &[Row]) -> Value {
    let devices: Vec<Value> = rows
        .iter()
        .map(|r| {
            let c = |i: usize| r.counts.map(|c| c[i]);
            serde_json::json!({
                "platform": r.dev.platform,
                "device": r.dev.device,
                "version": r.dev.version,
                "selector": format!("{}:{}", r.dev.platform_index, r.dev.device_index),
                "passed": c(0),
                "failed": c(1),
                "skipped": c(2),
                "expected_failures": c(3),
                "unexpected_passes": c(4),
                "seconds": r.took.as_secs_f64(),
                "status": r.status,
                "note": r.note,
                "ok": r.ok,
            })
        })
        .collect();
    serde_json::json!({ "devices": devices, "ok": rows.iter().all(|r| r.ok) })
}

fn print_table(rows: &[Row]) {
    let head = [
        "platform", "device", "OpenCL", "passed", "failed", "skipped", "xfail", "xpass", "time",
        "status",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let c = |i: usize| {
                r.counts
                    .map_or_else(|| "-".to_owned(), |c| c[i].to_string())
            };
            let version = r
                .dev
                .version
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ");
            vec![
                r.dev.platform.clone(),
                r.dev.device.clone(),
                version,
                c(0),
                c(1),
                c(2),
                c(3),
                c(4),
                util::secs(r.took),
                r.status.clone(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            cells
                .iter()
                .map(|row| row[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[String]| {
        let parts: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("| {} |", parts.join(" | "))
    };
    println!("\ndevice matrix:");
    println!("{}", line(&head.map(str::to_owned)));
    println!(
        "|{}|",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in &cells {
        println!("{}", line(row));
    }
    for r in rows {
        if let Some(note) = &r.note {
            println!(
                "  {} [{}/{}]: {note}",
                r.status, r.dev.platform, r.dev.device
            );
        }
    }
    for r in rows {
        let reasons = grouped_reasons(&r.json);
        if !reasons.is_empty() {
            println!(
                "\n[{}/{}] skips and expected failures:",
                r.dev.platform, r.dev.device
            );
            for (n, outcome, reason) in reasons {
                println!("  {n:>3} {outcome}: {reason}");
            }
        }
    }
}

/// Skipped and expected-failure tests of one device's summary, grouped by their reason's first line
/// (most frequent first): the matrix's "why" at a glance.
fn grouped_reasons(json: &Path) -> Vec<(usize, &'static str, String)> {
    let Some(v) = std::fs::read_to_string(json)
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
    else {
        return Vec::new();
    };
    let mut groups: Vec<(usize, &'static str, String)> = Vec::new();
    let tests = v["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| d["tests"].as_array().into_iter().flatten());
    for t in tests {
        let outcome = match t["outcome"].as_str() {
            Some("skipped") => "skipped",
            Some("expected_failure") => "expected failure",
            _ => continue,
        };
        let msg = t["message"]
            .as_str()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        // Expected failures carry "reason (link): panic text"; the reason and link are the grouping key.
        let key = match msg.find("): ") {
            Some(i) if outcome == "expected failure" => &msg[..=i],
            _ => msg,
        };
        let key: String = key.chars().take(140).collect();
        match groups.iter_mut().find(|g| g.1 == outcome && g.2 == key) {
            Some(g) => g.0 += 1,
            None => groups.push((1, outcome, key)),
        }
    }
    groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_collect_devices_timeout_and_test_args() {
        let o = Options::parse(&args(&[
            "--device",
            "port",
            "--device=intel",
            "--timeout",
            "60",
            "--",
            "core::",
            "--exact",
        ]))
        .unwrap();
        assert_eq!(o.devices, ["port", "intel"]);
        assert_eq!(o.timeout, Some(Duration::from_secs(60)));
        assert_eq!(o.test_args, ["core::", "--exact"]);
        assert!(!o.no_host);
    }

    #[test]
    fn options_reject_bad_input() {
        assert!(Options::parse(&args(&["--device"])).is_err());
        assert!(Options::parse(&args(&["--timeout", "soon"])).is_err());
        assert!(Options::parse(&args(&["core::"])).is_err());
    }

    #[test]
    fn counts_are_read_from_the_harness_summary() {
        let dir = std::env::temp_dir().join(format!("xtask-counts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.json");
        std::fs::write(
            &p,
            r#"{"totals":{"passed":7,"failed":1,"skipped":2,"expected_failures":3,"unexpected_passes":0}}"#,
        )
        .unwrap();
        assert_eq!(read_counts(&p), Some([7, 1, 2, 3, 0]));
        std::fs::write(&p, r#"{"totals":{"passed":7}}"#).unwrap();
        assert_eq!(read_counts(&p), None);
        assert_eq!(read_counts(&dir.join("missing.json")), None);
        assert_eq!(read_aborted(&p), None);
        std::fs::write(&p, r#"{"aborted":"core::x: timed out"}"#).unwrap();
        assert_eq!(read_aborted(&p).as_deref(), Some("core::x: timed out"));
        assert_eq!(running_test(&p), None);
        std::fs::write(current_file(&p), "[P/D] pool::threads").unwrap();
        assert_eq!(running_test(&p).as_deref(), Some("[P/D] pool::threads"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
