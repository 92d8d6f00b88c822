//! Small process helpers shared by the xtask commands: run a command while saying what it does, time a
//! step, run with a wall-clock limit, and run privileged commands through `sudo` when not root.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The error type of every xtask command: a message for the person at the terminal.
pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;
/// Result with [`Error`].
pub(crate) type Result<T = ()> = std::result::Result<T, Error>;

/// The workspace root (the directory holding the virtual `Cargo.toml`).
pub(crate) fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// `cargo` as invoked by the user (respects `$CARGO` set by `cargo run`).
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// A shell-like rendering of a command, for "running: ..." lines.
pub(crate) fn show(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            let _ = write!(s, "{}={} ", k.to_string_lossy(), v.to_string_lossy());
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains([' ', '"', '\'', ';', '$']) {
            let _ = write!(s, " '{}'", a.replace('\'', "'\\''"));
        } else {
            let _ = write!(s, " {a}");
        }
    }
    s
}

/// Prints and runs `cmd` with inherited stdio; an error if it cannot start or exits non-zero.
pub(crate) fn run(cmd: &mut Command) -> Result {
    println!("  $ {}", show(cmd));
    let _ = std::io::stdout().flush();
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{}`: {e}", show(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed: {status}", show(cmd)).into())
    }
}

/// Runs `cmd` quietly and returns its stdout if it exits zero; `None` if it cannot start or fails.
pub(crate) fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `program` is found on `PATH`.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// How a finished child process ended when run under [`run_with_timeout`].
#[derive(Debug)]
pub(crate) enum Ended {
    /// It exited (or was killed by a signal) on its own.
    Exited(ExitStatus),
    /// It ran past the limit and was killed.
    TimedOut,
}

/// Runs `cmd` with inherited stdio, killing it after `limit`.
pub(crate) fn run_with_timeout(cmd: &mut Command, limit: Duration) -> Result<Ended> {
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", show(cmd)))?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if start.elapsed() > limit {
            // Kill what we started, by id: the child and the processes it started (a test may run a
            // helper such as pyopencl-reference), deepest first so none is re-parented and missed.
            // The child stays in our process group so that Ctrl-C still reaches it.
            for pid in descendants(child.id()).into_iter().rev() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ended::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pids of every live descendant of `root` (from `/proc/<pid>/stat`), parents before children.
fn descendants(root: u32) -> Vec<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the parenthesised command name: state, ppid, ...
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter_map(|pid| Some((pid, parent_of(pid)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid) in &all {
            if ppid == p && !out.contains(&pid) {
                out.push(pid);
                frontier.push(pid);
            }
        }
    }
    out
}

/// Formats a duration as seconds with one decimal.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// How privileged commands are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Privilege {
    /// We are root: run directly.
    Root,
    /// Not root, `sudo` exists: prefix privileged commands with `sudo`.
    Sudo,
    /// Not root and no `sudo`: privileged steps must be refused.
    None,
}

impl Privilege {
    /// Detects whether we are root (from `/proc/self/status`, falling back to `id -u`) and whether `sudo` exists.
    pub(crate) fn detect() -> Self {
        let uid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|rest| rest.split_whitespace().nth(1).map(str::to_owned))
            })
            .or_else(|| output(Command::new("id").arg("-u")).map(|s| s.trim().to_owned()));
        if uid.as_deref() == Some("0") {
            Privilege::Root
        } else if on_path("sudo") {
            Privilege::Sudo
        } else {
            Privilege::None
        }
    }

    /// A command that runs `program` with root rights; an error (naming `why`) when that is impossible.
    pub(crate) fn command(self, program: &str, why: &str) -> Result<Command> {
        match self {
            Privilege::Root => Ok(Command::new(program)),
            Privilege::Sudo => {
                let mut c = Command::new("sudo");
                c.arg(program);
                Ok(c)
            }
            Privilege::None => Err(format!(
                "cannot {why}: this needs root, and we are neither root nor is `sudo` installed; \
                 run `cargo xtask setup` as root (or install sudo) once"
            )
            .into()),
        }
    }

    /// Writes `contents` to the root-owned file `path` (creating its directory), unless it already holds
    /// exactly that. Returns whether it wrote.
    pub(crate) fn write_file(self, path: &Path, contents: &str) -> Result<bool> {
        if std::fs::read_to_string(path).ok().as_deref() == Some(contents) {
            return Ok(false);
        }
        let why = format!("write {}", path.display());
        if let Some(dir) = path.parent() {
            if !dir.is_dir() {
                run(self.command("mkdir", &why)?.arg("-p").arg(dir))?;
            }
        }
        println!("  writing {} <- {:?}", path.display(), contents.trim_end());
        if self == Privilege::Root {
            std::fs::write(path, contents)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        } else {
            let mut cmd = self.command("tee", &why)?;
            cmd.arg(path).stdin(Stdio::piped()).stdout(Stdio::null());
            let mut child = cmd.spawn()?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(contents.as_bytes())?;
            }
            let status = child.wait()?;
            if !status.success() {
                return Err(format!("`sudo tee {}` failed: {status}", path.display()).into());
            }
        }
        Ok(true)
    }
}

/// One timed step of a multi-step command, for the closing summary.
#[derive(Debug)]
pub(crate) struct StepLog {
    rows: Vec<(String, String, Duration)>,
}

impl StepLog {
    /// An empty log.
    pub(crate) fn new() -> Self {
        Self { rows: Vec::new() }
    }

    /// Runs `f` as the step `name`, printing a header, timing it and recording its one-line outcome.
    pub(crate) fn step(&mut self, name: &str, f: impl FnOnce() -> Result<String>) -> Result {
        println!("==> {name}");
        let start = Instant::now();
        let res = f();
        let took = start.elapsed();
        match res {
            Ok(outcome) => {
                println!("    {outcome} ({})", secs(took));
                self.rows.push((name.to_owned(), outcome, took));
                Ok(())
            }
            Err(e) => {
                self.rows
                    .push((name.to_owned(), format!("FAILED: {e}"), took));
                self.print("summary");
                Err(e)
            }
        }
    }

    /// Like [`StepLog::step`], but a failure is recorded without printing the summary, so that the
    /// caller can go on with the next step.
    pub(crate) fn step_continue(
        &mut self,
        name: &str,
        f: impl FnOnce() -> Result<String>,
    ) -> Result {
        println!("==> {name}");
        let start = Instant::now();
        let res = f();
        let took = start.elapsed();
        match res {
            Ok(outcome) => {
                println!("    {outcome} ({})", secs(took));
                self.rows.push((name.to_owned(), outcome, took));
                Ok(())
            }
            Err(e) => {
                println!("    FAILED: {e} ({})", secs(took));
                self.rows
                    .push((name.to_owned(), format!("FAILED: {e}"), took));
                Err(e)
            }
        }
    }

    /// Prints the steps as a table.
    pub(crate) fn print(&self, title: &str) {
        let w = self
            .rows
            .iter()
            .map(|r| r.0.len())
            .max()
            .unwrap_or(4)
            .max(4);
        println!("\n{title}:");
        for (name, outcome, took) in &self.rows {
            println!("  {name:<w$}  {:>7}  {outcome}", secs(*took));
        }
        let total: Duration = self.rows.iter().map(|r| r.2).sum();
        println!("  {:<w$}  {:>7}", "total", secs(total));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_root_or_sudo_privileged_steps_are_refused_clearly() {
        let e = Privilege::None
            .command("apt-get", "run apt-get")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot run apt-get: this needs root"), "{e}");
        assert!(e.contains("neither root nor is `sudo` installed"), "{e}");
        let e = Privilege::None
            .write_file(Path::new("/nonexistent-dir/x.icd"), "x\n")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot write /nonexistent-dir/x.icd"),
            "{e}"
        );
    }

    #[test]
    fn sudo_prefixes_and_root_runs_directly() {
        let c = Privilege::Sudo.command("apt-get", "x").unwrap();
        assert_eq!(show(&c), "sudo apt-get");
        let c = Privilege::Root.command("apt-get", "x").unwrap();
        assert_eq!(show(&c), "apt-get");
    }

    #[test]
    fn timeout_kills_the_child_and_its_children() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30; wait"]);
        let start = Instant::now();
        let ended = run_with_timeout(&mut cmd, Duration::from_millis(300)).unwrap();
        assert!(matches!(ended, Ended::TimedOut), "{ended:?}");
        assert!(start.elapsed() < Duration::from_secs(10));
        let mut quick = Command::new("true");
        assert!(
            matches!(run_with_timeout(&mut quick, Duration::from_secs(10)).unwrap(), Ended::Exited(s) if s.success())
        );
    }

    #[test]
    fn descendants_finds_grandchildren() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .spawn()
            .unwrap();
        // The shell starts its two sleeps when the scheduler lets it: poll (a loaded CI machine
        // took longer than a fixed 200 ms).
        let mut d = descendants(child.id());
        for _ in 0..250 {
            if d.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            d = descendants(child.id());
        }
        assert_eq!(d.len(), 2, "two sleeps under the shell: {d:?}");
        for pid in d.iter().rev() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn show_quotes_arguments_with_spaces() {
        let mut c = Command::new("echo");
        c.args(["a b", "c"]).env("K", "v");
        assert_eq!(show(&c), "K=v echo 'a b' c");
    }

    /// Architecture invariant: xtask depends on no `cl-*` crate, and nothing depends on `cl-tests` or
    /// `cl-benches` (docs/ARCHITECTURE.md).
    #[test]
    fn tidy_xtask_links_no_opencl_and_nothing_depends_on_tests_or_benches() {
        let manifest = std::fs::read_to_string(root().join("xtask/Cargo.toml")).unwrap();
        let deps = manifest.split("[dependencies]").nth(1).unwrap_or("");
        let deps = deps.split("\n[").next().unwrap_or("");
        for line in deps.lines() {
            assert!(
                !line.trim_start().starts_with("cl-"),
                "xtask must not depend on `{}`",
                line.trim()
            );
        }
        for dir in [
            "crates/cl-raw",
            "crates/cl-mem",
            "crates/cl-pool",
            "crates/cl-characterize",
            "xtask",
        ] {
            let toml = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
            for line in toml.lines().map(str::trim_start) {
                assert!(
                    !line.starts_with("cl-tests") && !line.starts_with("cl-benches"),
                    "{dir} must not depend on cl-tests or cl-benches: `{line}`"
                );
            }
        }
    }
}
