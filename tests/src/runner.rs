//! The run loop: every selected test on every selected device, libtest-like output, the per-device
//! summary, and the JSON summary that `cargo xtask test-devices` reads.

use std::cell::RefCell;
use std::io::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::args::Args;
use crate::device::ContextGone;
use crate::expectations;
use crate::outcome::Outcome;
use crate::{DeviceTest, TestDevice};

/// One test's record.
#[derive(Debug)]
struct Record {
    name: String,
    outcome: Outcome,
    message: Option<String>,
    took: Duration,
}

/// Everything that ran on one device.
#[derive(Debug)]
struct DeviceRun {
    platform: String,
    device: String,
    version: String,
    platform_index: usize,
    device_index: usize,
    records: Vec<Record>,
}

impl DeviceRun {
    fn count(&self, o: Outcome) -> usize {
        self.records.iter().filter(|r| r.outcome == o).count()
    }
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Passed,
    Outcome::Failed,
    Outcome::Skipped,
    Outcome::ExpectedFailure,
    Outcome::UnexpectedPass,
];

thread_local! {
    /// The message and location of the last panic on this thread, recorded by our panic hook.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Names the tests `suite::name` and checks the registrations: an error on a duplicate name or
/// a malformed expectation.
fn collect(tests: &[DeviceTest]) -> Result<Vec<(String, DeviceTest)>, String> {
    let mut all: Vec<(String, DeviceTest)> = Vec::new();
    for t in tests {
        let name = t.id();
        if all.iter().any(|(n, _)| *n == name) {
            return Err(format!("two device tests are named `{name}`"));
        }
        for e in t.expected {
            expectations::check(e, &name)?;
        }
        all.push((name, *t));
    }
    Ok(all)
}

/// An error when a [`DRIVER_KEEPS_CONTEXTS`] entry names no test of `all` (a renamed test).
fn check_driver_keeps_contexts(all: &[(String, DeviceTest)]) -> Result<(), String> {
    for (_, test, _) in DRIVER_KEEPS_CONTEXTS {
        if !test.is_empty() && !all.iter().any(|(n, _)| n == test) {
            return Err(format!(
                "DRIVER_KEEPS_CONTEXTS (tests/src/runner.rs) names `{test}`, which is no device test"
            ));
        }
    }
    Ok(())
}

/// Runs one test, catching panics; `Err((is_skip, message))` when it did not pass.
fn run_one(test: &DeviceTest, dev: &TestDevice) -> Result<(), (bool, String)> {
    run_caught(|| (test.run)(dev))
}

/// Runs `body`, catching a panic: `Err((is_skip, message))` when it did not pass.
fn run_caught(body: impl FnOnce() -> crate::TestResult) -> Result<(), (bool, String)> {
    LAST_PANIC.with(|p| p.borrow_mut().take());
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err((e.is_skip(), e.message().to_owned())),
        Err(payload) => {
            let recorded = LAST_PANIC.with(|p| p.borrow_mut().take());
            let msg = recorded.unwrap_or_else(|| {
                payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panicked".to_owned())
            });
            Err((false, msg))
        }
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

/// The entry point of the device test binary: see [`crate::main`].
pub(crate) fn main(registered: &[DeviceTest]) -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let tests = match collect(registered).and_then(|t| check_driver_keeps_contexts(&t).map(|()| t))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if args.list {
        for (name, _) in &tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let devices = match TestDevice::selected() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: device selection failed: {e}");
            return ExitCode::from(2);
        }
    };
    if args.list_devices {
        for d in &devices {
            println!(
                "device\t{}\t{}\t{}\t{}\t{}",
                d.platform_index(),
                d.device_index(),
                d.platform_name(),
                d.device_name(),
                d.version()
            );
        }
        return ExitCode::SUCCESS;
    }
    let require = std::env::var("CL_TEST_REQUIRE_DEVICES").is_ok_and(|v| v == "1");
    if devices.is_empty() {
        let bar = "!".repeat(78);
        println!(
            "\n{bar}\n!! NO OPENCL DEVICE SELECTED: the {} device tests did not run.",
            tests.len()
        );
        println!("!! Run `cargo xtask setup` to install PoCL, Oclgrind and the Intel CPU runtime,");
        println!("!! or check CL_TEST / PYOPENCL_TEST. `cargo xtask devices` lists what is present.\n{bar}\n");
        write_json(&args, &[], None);
        return if require {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }

    panic::set_hook(Box::new(|info| {
        let msg = info.payload_as_str().unwrap_or("panicked").to_owned();
        let full = match info.location() {
            Some(l) => format!(
                "panicked at {}:{}:{}:\n{msg}",
                l.file(),
                l.line(),
                l.column()
            ),
            None => msg,
        };
        // Tests run on the main thread: its panic becomes the test's failure message. A panic on a
        // thread a test spawned is printed as the default hook would (the test sees it through `join`).
        let current = std::thread::current();
        match current.name() {
            Some("main") => LAST_PANIC.with(|p| *p.borrow_mut() = Some(full)),
            name => eprintln!("\nthread '{}' {full}", name.unwrap_or("<unnamed>")),
        }
    }));

    let selected_per_device = |d: &TestDevice| {
        tests
            .iter()
            .filter(|(n, _)| args.selects(n, &format!("{} {n}", d.label())))
            .count()
    };
    let total: usize = devices.iter().map(selected_per_device).sum();
    println!("\nrunning {total} tests on {} device(s)", devices.len());
    let shared = Arc::new(Mutex::new(Shared::default()));
    start_watchdog(Arc::clone(&shared), args.clone(), test_timeout());
    for dev in &devices {
        lock(&shared).runs.push(DeviceRun {
            platform: dev.platform_name().to_owned(),
            device: dev.device_name().to_owned(),
            version: dev.version().to_owned(),
            platform_index: dev.platform_index(),
            device_index: dev.device_index(),
            records: Vec::new(),
        });
        for (name, test) in &tests {
            let full = format!("{} {name}", dev.label());
            if !args.selects(name, &full) {
                continue;
            }
            if !args.quiet {
                print!("test {full} ... ");
                flush();
            }
            lock(&shared).current = Some((name.clone(), Instant::now()));
            mark_current(&args, Some(&full));
            let start = Instant::now();
            let before = cl_mem::live_objects();
            let result = run_one(test, dev);
            let mut created = dev.take_created_contexts();
            if DRIVER_KEEPS_CONTEXTS
                .iter()
                .any(|(p, t, _)| dev.platform_name().contains(p) && (t.is_empty() || t == name))
            {
                created.clear();
            }
            let deliberate = DELIBERATE_LEAK.with(|l| l.borrow_mut().take());
            // A test that passed must also have released everything it made.
            let result = match deliberate {
                Some(_) => result,
                None => {
                    result.and_then(|()| check_released(created, &before).map_err(|m| (false, m)))
                }
            };
            let took = start.elapsed();
            let versions = format!("{} {}", dev.version(), dev.driver_version());
            let exp = expectations::lookup(
                test.expected,
                dev.platform_name(),
                dev.device_name(),
                &versions,
            );
            let outcome = Outcome::classify(&result, exp);
            let message = match (&result, outcome, exp) {
                (Err((_, m)), Outcome::ExpectedFailure, Some(e)) => Some(format!("{} ({}): {m}", e.reason, e.link)),
                (Err((false, m)), Outcome::Failed, Some(e)) => Some(format!(
                    "{m}\n(not the documented bug of its expectation in its `device_test!`, which expects a \
                     failure containing `{}`)",
                    e.failure
                )),
                (Ok(()), Outcome::UnexpectedPass, Some(e)) => Some(format!(
                    "expected to fail ({}, {}) but passed: remove or narrow its expectation in its `device_test!`",
                    e.reason, e.link
                )),
                (Err((_, m)), _, _) => Some(m.clone()),
                (Ok(()), _, _) => None,
            };
            let mut state = lock(&shared);
            if state.aborting {
                // The watchdog is reporting and exiting; do not print over it.
                drop(state);
                std::thread::park();
                return ExitCode::from(101);
            }
            state.current = None;
            print_outcome(&args, outcome, message.as_deref());
            if let Some(run) = state.runs.last_mut() {
                run.records.push(Record {
                    name: name.clone(),
                    outcome,
                    message,
                    took,
                });
            }
        }
    }
    mark_current(&args, None);
    let state = lock(&shared);
    if args.quiet {
        println!();
    }
    report(&state.runs);
    write_json(&args, &state.runs, None);
    if state
        .runs
        .iter()
        .flat_map(|r| &r.records)
        .any(|r| r.outcome.is_bad())
    {
        ExitCode::from(101)
    } else {
        ExitCode::SUCCESS
    }
}

/// Where a driver itself keeps a context alive after every handle to it and to its objects was
/// released, so its destructor callback never runs: `(platform substring, test name or "" for
/// every test, why)`. The live-wrapper half of [`check_released`] still runs there.
const DRIVER_KEEPS_CONTEXTS: &[(&str, &str, &str)] = &[
    (
        "Intel(R) OpenCL",
        "",
        "the Intel CPU runtime never destroys a context after clEnqueueSVMFree ran in it \
         (docs/DEVICES.md#intel-svm-free-keeps-context)",
    ),
    (
        "Portable Computing Language",
        "images::every_image_type_roundtrips",
        "PoCL 3.1 never destroys a context that held a 1-D buffer image \
         (docs/DEVICES.md#pocl-image1d-buffer-keeps-context)",
    ),
    (
        "Portable Computing Language",
        "tracking::an_image_from_a_buffer_shares_its_map_lock_and_record",
        "as above",
    ),
    (
        "Portable Computing Language",
        "tracking::a_dropped_kernels_arguments_are_released_off_the_callback_thread",
        "as above",
    ),
    (
        "Portable Computing Language",
        "tracking::an_event_callback_may_drop_objects_that_talk_to_the_driver",
        "as above",
    ),
    (
        "Portable Computing Language",
        "tracking::a_user_event_set_here_may_drop_objects_in_its_callback",
        "as above",
    ),
];

thread_local! {
    /// Set by [`leaks_deliberately`] during a test: the leak check skips that test.
    static DELIBERATE_LEAK: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Called by a test that leaks on purpose (a `mem::forget` of a guard, to show it is sound): the
/// leak check after it is skipped. `reason` says what is leaked and why.
pub fn leaks_deliberately(reason: &str) {
    DELIBERATE_LEAK.with(|l| *l.borrow_mut() = Some(reason.to_owned()));
}

/// How long [`check_released`] waits for references that drivers and event callbacks release
/// asynchronously (a callback holding an event clone, a deferred release after a command completes).
const RELEASE_GRACE: Duration = Duration::from_secs(5);

/// The leak check after a test that passed: every context the test got from
/// [`TestDevice::context`] was destroyed (its 3.0 destructor callback ran: the driver destroys a
/// context only once the memory objects, queues, programs, kernels and events made in it are
/// released, so a reference leaked through a raw handle shows too), and cl-mem's live wrapper counts
/// ([`cl_mem::live_objects`]: contexts, queues, memory objects, events, kept argument lists) are
/// back where they were
/// before the test. Waits up to [`RELEASE_GRACE`] for asynchronous releases; the error names each
/// kind and count.
fn check_released(created: Vec<ContextGone>, before: &cl_mem::LiveObjects) -> Result<(), String> {
    let deadline = Instant::now() + RELEASE_GRACE;
    while created.iter().any(|c| !c.is_gone()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = created.iter().filter(|c| !c.is_gone()).count();
    let mut problems = Vec::new();
    if alive > 0 {
        problems.push(format!(
            "{alive} of the {} context(s) the test made with TestDevice::context still exist(s) \
             in the driver (no destructor callback): the context or an object made in it was \
             not released",
            created.len()
        ));
    }
    let mut more = cl_mem::live_objects().more_than(before);
    while !more.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        more = cl_mem::live_objects().more_than(before);
    }
    problems.extend(
        more.iter()
            .map(|(kind, n)| format!("{n} {kind} wrapper(s) more alive than before the test")),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "leak check after the test (tests/src/runner.rs, check_released): {}",
            problems.join("; ")
        ))
    }
}

/// With `--json PATH`, keeps `PATH.current` naming the test now running (removed at the end), so that
/// when a driver crash kills the process before any summary, `cargo xtask test-devices` can still say
/// which test it was.
fn mark_current(args: &Args, test: Option<&str>) {
    let Some(json) = &args.json else { return };
    let mut path = json.clone().into_os_string();
    path.push(".current");
    let _ = match test {
        Some(t) => std::fs::write(&path, t),
        None => std::fs::remove_file(&path),
    };
}

/// What the run loop and the watchdog share.
#[derive(Debug, Default)]
struct Shared {
    runs: Vec<DeviceRun>,
    /// The test running now and when it started.
    current: Option<(String, Instant)>,
    /// The watchdog fired and is reporting: the run loop must not touch the output any more.
    aborting: bool,
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A test panics on the run-loop thread but never while holding this lock; recover regardless.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The per-test limit: `CL_TEST_TIMEOUT` seconds, default 120 (the whole Oclgrind run, the slowest
/// device here, takes seconds; a test past two minutes is hung on a driver call).
fn test_timeout() -> Duration {
    let secs = std::env::var("CL_TEST_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

/// A thread that ends the process when one test runs longer than `limit`: a driver call that never
/// returns cannot be interrupted, so the stuck test is recorded as failed, the summary and JSON are
/// written for what did run, and the process exits 101 (the remaining tests of this process do not run;
/// `cargo xtask test-devices` runs each device in its own process, so other devices are unaffected).
fn start_watchdog(shared: Arc<Mutex<Shared>>, args: Args, limit: Duration) {
    let spawned = std::thread::Builder::new().name("cl-tests-watchdog".into()).spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        let mut state = lock(&shared);
        let Some((name, started)) = state.current.clone() else { continue };
        if started.elapsed() < limit {
            continue;
        }
        state.aborting = true;
        let message = format!(
            "timed out after {}s (CL_TEST_TIMEOUT); the process stopped here, later tests did not run",
            limit.as_secs()
        );
        println!("TIMED OUT");
        if let Some(run) = state.runs.last_mut() {
            run.records.push(Record {
                name: name.clone(),
                outcome: Outcome::Failed,
                message: Some(message.clone()),
                took: started.elapsed(),
            });
        }
        report(&state.runs);
        write_json(&args, &state.runs, Some(&format!("{name}: {message}")));
        flush();
        std::process::exit(101);
    });
    if let Err(e) = spawned {
        eprintln!("warning: no per-test timeout: cannot start the watchdog thread: {e}");
    }
}

fn print_outcome(args: &Args, outcome: Outcome, message: Option<&str>) {
    if args.quiet {
        print!(
            "{}",
            match outcome {
                Outcome::Passed => ".",
                Outcome::Failed => "F",
                Outcome::Skipped => "s",
                Outcome::ExpectedFailure => "x",
                Outcome::UnexpectedPass => "X",
            }
        );
    } else {
        match (outcome, message) {
            (Outcome::Passed, _) => println!("ok"),
            (Outcome::Failed, _) => println!("FAILED"),
            (Outcome::Skipped, Some(m)) => println!("skipped: {m}"),
            (Outcome::ExpectedFailure, Some(m)) => println!("expected failure: {m}"),
            (Outcome::UnexpectedPass, _) => println!("UNEXPECTED PASS"),
            (o, None) => println!("{}", o.name()),
        }
    }
    flush();
}

fn report(runs: &[DeviceRun]) {
    let bad: Vec<(&DeviceRun, &Record)> = runs
        .iter()
        .flat_map(|r| r.records.iter().map(move |rec| (r, rec)))
        .filter(|(_, rec)| rec.outcome.is_bad())
        .collect();
    if !bad.is_empty() {
        println!("\nfailures:");
        for (run, rec) in &bad {
            println!("\n---- [{}/{}] {} ----", run.platform, run.device, rec.name);
            println!("{}", rec.message.as_deref().unwrap_or(""));
        }
        println!("\nfailures:");
        for (run, rec) in &bad {
            println!("    [{}/{}] {}", run.platform, run.device, rec.name);
        }
    }
    println!("\nper device: passed / failed / skipped / expected failures / unexpected passes");
    for run in runs {
        let c: Vec<String> = OUTCOMES.iter().map(|o| run.count(*o).to_string()).collect();
        println!(
            "  [{}/{}] ({}): {}",
            run.platform,
            run.device,
            run.version,
            c.join(" / ")
        );
    }
    let n = |o: Outcome| runs.iter().map(|r| r.count(o)).sum::<usize>();
    let ok = bad.is_empty();
    println!(
        "\ntest result: {}. {} passed; {} failed; {} skipped; {} expected failures; {} unexpected passes\n",
        if ok { "ok" } else { "FAILED" },
        n(Outcome::Passed),
        n(Outcome::Failed),
        n(Outcome::Skipped),
        n(Outcome::ExpectedFailure),
        n(Outcome::UnexpectedPass)
    );
}

fn summary(runs: &[DeviceRun], aborted: Option<&str>) -> Value {
    let counts = |f: &dyn Fn(Outcome) -> usize| {
        let mut m = serde_json::Map::new();
        for o in OUTCOMES {
            m.insert(o.key().to_owned(), json!(f(o)));
        }
        Value::Object(m)
    };
    let devices: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "platform": r.platform,
                "device": r.device,
                "version": r.version,
                "platform_index": r.platform_index,
                "device_index": r.device_index,
                "counts": counts(&|o| r.count(o)),
                "tests": r.records.iter().map(|rec| json!({
                    "name": rec.name,
                    "outcome": rec.outcome.name(),
                    "message": rec.message,
                    "seconds": rec.took.as_secs_f64(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "schema": 1,
        "aborted": aborted,
        "devices": devices,
        "totals": counts(&|o| runs.iter().map(|r| r.count(o)).sum()),
    })
}

fn write_json(args: &Args, runs: &[DeviceRun], aborted: Option<&str>) {
    let Some(path) = &args.json else { return };
    let text = serde_json::to_string_pretty(&summary(runs, aborted)).unwrap_or_default();
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("warning: cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(module: &'static str, name: &'static str) -> DeviceTest {
        DeviceTest {
            module,
            name,
            ..DeviceTest::DEFAULT
        }
    }

    #[test]
    fn panics_errors_and_skips_are_caught_with_their_messages() {
        // No hook installed in unit tests: the message comes from the payload.
        let r = run_caught(|| {
            assert_eq!(1 + 1, 3, "arithmetic");
            Ok(())
        });
        let (skip, msg) = r.unwrap_err();
        assert!(!skip);
        assert!(msg.contains("arithmetic"), "{msg}");
        assert_eq!(
            run_caught(|| Err(crate::skip("no SVM"))),
            Err((true, "no SVM".to_owned()))
        );
        assert_eq!(
            run_caught(|| Err(crate::fail("bad"))),
            Err((false, "bad".to_owned()))
        );
        assert_eq!(run_caught(|| Ok(())), Ok(()));
    }

    #[test]
    fn collect_names_tests_by_suite_and_rejects_duplicates() {
        let one = t("device_tests::runtime", "one");
        let two = t("device_tests::buffers::creation", "two");
        let names: Vec<String> = collect(&[one, two])
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["runtime::one", "buffers::two"]);
        assert_eq!(
            collect(&[one, t("device_tests::runtime::more", "one")]).err(),
            Some("two device tests are named `runtime::one`".to_owned())
        );
    }

    #[test]
    fn collect_refuses_an_expectation_without_its_devices_md_section() {
        const BAD: &[crate::Expectation] = &[crate::Expectation {
            platform: "portable",
            device: "",
            version: "",
            reason: "example",
            link: "docs/DEVICES.md#no-such-section",
            failure: "clEnqueueFillBuffer failed: CL_INVALID_VALUE",
            flaky: false,
        }];
        let bad = DeviceTest {
            expected: BAD,
            ..t("device_tests::runtime", "one")
        };
        assert_eq!(
            collect(&[bad]).err(),
            Some("runtime::one: no section #no-such-section in docs/DEVICES.md".to_owned())
        );
    }

    #[test]
    fn registered_tests_run_by_suite_order_then_file_then_line() {
        let at = |module, name, line| DeviceTest {
            line,
            ..t(module, name)
        };
        let mut all = vec![
            at("device_tests::soak", "s", 1),
            at("device_tests::buffers::creation", "c", 9),
            at("device_tests::buffers::bad_input", "b", 20),
            at("device_tests::buffers::bad_input", "a", 10),
            at("device_tests::harness", "h", 5),
        ];
        crate::sort_in_run_order(&mut all);
        let names: Vec<&str> = all.iter().map(|t| t.name).collect();
        assert_eq!(names, ["h", "a", "b", "c", "s"]);
    }

    #[test]
    fn summary_counts_outcomes_per_device_and_in_total() {
        let rec = |o| Record {
            name: "s::t".into(),
            outcome: o,
            message: None,
            took: Duration::ZERO,
        };
        let run = DeviceRun {
            platform: "P".into(),
            device: "D".into(),
            version: "OpenCL 3.0".into(),
            platform_index: 1,
            device_index: 0,
            records: vec![
                rec(Outcome::Passed),
                rec(Outcome::Skipped),
                rec(Outcome::ExpectedFailure),
            ],
        };
        let v = summary(&[run], None);
        assert_eq!(v["totals"]["passed"], 1);
        assert_eq!(v["totals"]["failed"], 0);
        assert_eq!(v["totals"]["expected_failures"], 1);
        assert_eq!(v["devices"][0]["counts"]["skipped"], 1);
        assert_eq!(v["devices"][0]["platform_index"], 1);
        assert_eq!(v["devices"][0]["tests"][2]["outcome"], "expected_failure");
    }
}
