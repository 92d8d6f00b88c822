//! `cargo xtask setup`: installs and registers the three CPU OpenCL runtimes (PoCL, Oclgrind, Intel CPU)
//! and the ICD loader, idempotently, saying what it does.
//!
//! Steps (each skipped when already done):
//! 1. apt packages: the ICD loader and headers, `clinfo`, PoCL, Oclgrind.
//! 2. Oclgrind's ICD file: Debian ships the library but no `/etc/OpenCL/vendors` entry.
//! 3. The Intel CPU runtime from PyPI (`intel-opencl-rt` plus `intel-cmplr-lib-rt`, which it needs but does
//!    not pull in) into the project-owned virtual environment `.venv-intel/`.
//! 4. Intel's ICD file: the packaged `.icd` names a build-time placeholder path, so we write our own naming
//!    the installed `libintelocl.so`. Its dependencies resolve through the library's own
//!    `RUNPATH=$ORIGIN`, so no `LD_LIBRARY_PATH` or `ld.so.conf.d` entry is needed: every process (plain
//!    `cargo test` too) finds it. A dependency that `ldd` still cannot find is symlinked into that directory
//!    from elsewhere in the venv.
//! 5. Verify with `clinfo -l` that all three platforms appear.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Privilege, Result, StepLog};

/// apt packages: the ICD loader (runtime and headers), clinfo, PoCL's CPU ICD, and Oclgrind.
const APT_PACKAGES: &[&str] = &[
    "ocl-icd-opencl-dev",
    "ocl-icd-libopencl1",
    "clinfo",
    "pocl-opencl-icd",
    "oclgrind",
];

/// PyPI packages of the Intel CPU runtime. `intel-opencl-rt` only pulls `intel-cmplr-lic-rt` (the license),
/// not `intel-cmplr-lib-rt` (libimf, libsvml, libirng, libintlc), which `libintelocl.so` links against.
const PIP_PACKAGES: &[&str] = &["intel-opencl-rt", "intel-cmplr-lib-rt"];

/// The project-owned virtual environment for the Intel runtime (git-ignored).
pub(crate) const INTEL_VENV: &str = ".venv-intel";

const VENDORS_DIR: &str = "/etc/OpenCL/vendors";

/// Platform names `clinfo -l` must show after setup.
pub(crate) const EXPECTED_PLATFORMS: &[&str] =
    &["Portable Computing Language", "Oclgrind", "Intel(R) OpenCL"];

/// Runs every step; an error names the step that failed and why.
pub(crate) fn run() -> Result {
    let privilege = Privilege::detect();
    println!(
        "cargo xtask setup: {}",
        match privilege {
            Privilege::Root => "running as root",
            Privilege::Sudo => "not root: privileged steps go through sudo",
            Privilege::None =>
                "not root and no sudo: privileged steps will be refused if any is needed",
        }
    );
    let mut log = StepLog::new();
    log.step("apt packages", || apt_packages(privilege))?;
    log.step("Oclgrind ICD", || oclgrind_icd(privilege))?;
    if std::env::consts::ARCH != "x86_64" {
        // The PyPI wheels of the Intel runtime exist for x86-64 Linux only.
        log.step("Intel CPU runtime", || {
            Ok(format!(
                "skipped: no Intel CPU runtime for {}",
                std::env::consts::ARCH
            ))
        })?;
    } else if let Some(other) = registered_elsewhere() {
        // Another checkout's runtime is registered and loads: keep it rather than install ~700 MiB again
        // and repoint the system-wide ICD file at this checkout (a temporary clone would then break
        // the platform for every checkout once deleted).
        log.step("Intel CPU runtime", || {
            Ok(format!(
                "already registered from another checkout: {} (kept; delete {} and rerun to use this checkout's)",
                other.display(),
                INTEL_ICD
            ))
        })?;
    } else {
        let mut lib = PathBuf::new();
        log.step("Intel CPU runtime (pip)", || {
            let (outcome, found) = intel_venv()?;
            lib = found;
            Ok(outcome)
        })?;
        log.step("Intel CPU ICD", || intel_icd(privilege, &lib))?;
    }
    log.step("verify (clinfo -l)", verify)?;
    log.print("setup summary");
    Ok(())
}

fn dpkg_installed(pkg: &str) -> bool {
    util::output(Command::new("dpkg-query").args(["-W", "-f=${Status}", pkg]))
        .is_some_and(|s| s.trim() == "install ok installed")
}

/// `apt-get install -y --no-install-recommends`, non-interactive. The variable goes through `env` because
/// `sudo` resets the environment.
fn apt_install(privilege: Privilege, why: &str) -> Result<Command> {
    let mut cmd = privilege.command("env", why)?;
    cmd.args([
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
    ]);
    Ok(cmd)
}

fn apt_packages(privilege: Privilege) -> Result<String> {
    if !util::on_path("dpkg-query") || !util::on_path("apt-get") {
        return Err("this setup needs a Debian/Ubuntu system (dpkg and apt-get not found)".into());
    }
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        return Ok(format!("already installed: {}", APT_PACKAGES.join(" ")));
    }
    println!("  missing: {}", missing.join(" "));
    util::run(privilege.command("apt-get", "run apt-get")?.arg("update"))?;
    util::run(apt_install(privilege, "run apt-get")?.args(&missing))?;
    Ok(format!("installed: {}", missing.join(" ")))
}

fn oclgrind_icd(privilege: Privilege) -> Result<String> {
    let files = util::output(Command::new("dpkg").args(["-L", "oclgrind"]))
        .ok_or("`dpkg -L oclgrind` failed: is the oclgrind package installed?")?;
    let lib = files
        .lines()
        .find(|l| l.ends_with("/liboclgrind-rt-icd.so"))
        .ok_or("the oclgrind package has no liboclgrind-rt-icd.so")?;
    let icd = Path::new(VENDORS_DIR).join("oclgrind.icd");
    let wrote = privilege.write_file(&icd, &format!("{lib}\n"))?;
    Ok(format!(
        "{} {} -> {lib}",
        if wrote {
            "wrote"
        } else {
            "already registered:"
        },
        icd.display()
    ))
}

/// A Python able to create a venv: `python3` if it has `venv` and `ensurepip`, else Debian's after
/// installing `python3-venv`.
fn venv_python() -> Result<String> {
    let works =
        |py: &str| util::output(Command::new(py).args(["-c", "import venv, ensurepip"])).is_some();
    if works("python3") {
        return Ok("python3".into());
    }
    println!("  python3 cannot create virtual environments here: installing python3-venv");
    util::run(apt_install(Privilege::detect(), "install python3-venv")?.arg("python3-venv"))?;
    if works("/usr/bin/python3") {
        Ok("/usr/bin/python3".into())
    } else {
        Err("no python3 with the venv module, even after installing python3-venv".into())
    }
}

fn find_file(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut dirs = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if e.file_name() == name {
            return Some(p);
        }
        if depth > 0 && e.file_type().is_ok_and(|t| t.is_dir()) {
            dirs.push(p);
        }
    }
    dirs.iter().find_map(|d| find_file(d, name, depth - 1))
}

/// Creates `.venv-intel` and pip-installs the Intel runtime; returns the outcome and `libintelocl.so`.
fn intel_venv() -> Result<(String, PathBuf)> {
    let venv = util::root().join(INTEL_VENV);
    let py = venv.join("bin/python");
    let mut did = Vec::new();
    if !py.is_file() {
        let base = venv_python()?;
        util::run(Command::new(base).args(["-m", "venv"]).arg(&venv))?;
        did.push(format!("created {}", venv.display()));
    }
    let missing: Vec<&str> = PIP_PACKAGES
        .iter()
        .copied()
        .filter(|p| util::output(Command::new(&py).args(["-m", "pip", "show", "-q", p])).is_none())
        .collect();
    if !missing.is_empty() {
        util::run(
            Command::new(&py)
                .args(["-m", "pip", "install", "--disable-pip-version-check", "-q"])
                .args(&missing)
                .env("PIP_NO_INPUT", "1"),
        )
        .map_err(|e| {
            format!("{e} (the Intel runtime comes from PyPI: is the network reachable?)")
        })?;
        did.push(format!("pip installed {}", missing.join(" ")));
    }
    let lib = find_file(&venv.join("lib"), "libintelocl.so", 0)
        .or_else(|| find_file(&venv, "libintelocl.so", 5))
        .ok_or_else(|| {
            format!(
                "libintelocl.so not found under {} after pip install",
                venv.display()
            )
        })?;
    let version = util::output(Command::new(&py).args(["-m", "pip", "show", "intel-opencl-rt"]))
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Version: ").map(str::to_owned))
        })
        .unwrap_or_else(|| "?".into());
    if did.is_empty() {
        did.push(format!("already installed: intel-opencl-rt {version}"));
    } else {
        did.push(format!("intel-opencl-rt {version}"));
    }
    Ok((did.join("; "), lib))
}

/// The sonames `ldd` reports as "not found" for `lib`.
fn unresolved(lib: &Path) -> Result<Vec<String>> {
    let out = util::output(Command::new("ldd").arg(lib))
        .ok_or_else(|| format!("`ldd {}` failed", lib.display()))?;
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    v.sort();
    v.dedup();
    Ok(v)
}

/// The Intel ICD file setup writes.
const INTEL_ICD: &str = "/etc/OpenCL/vendors/intel-cpu.icd";

/// The library the Intel ICD file names, when that is outside this checkout's venv, exists, and has every
/// dependency resolved.
fn registered_elsewhere() -> Option<PathBuf> {
    let named = PathBuf::from(std::fs::read_to_string(INTEL_ICD).ok()?.trim());
    let ours = util::root().join(INTEL_VENV);
    let usable = named.is_file()
        && !named.starts_with(&ours)
        && unresolved(&named).is_ok_and(|v| v.is_empty());
    usable.then_some(named)
}

fn intel_icd(privilege: Privilege, lib: &Path) -> Result<String> {
    let dir = lib
        .parent()
        .ok_or("libintelocl.so has no parent directory")?;
    let venv = util::root().join(INTEL_VENV);
    let mut notes = Vec::new();
    for soname in unresolved(lib)? {
        // RUNPATH is $ORIGIN: a dependency placed next to the library is found by every process.
        let found = find_file(&venv, &soname, 6).ok_or_else(|| {
            format!(
                "{} needs {soname}, which is nowhere in {}",
                lib.display(),
                venv.display()
            )
        })?;
        let link = dir.join(&soname);
        println!("  linking {} -> {}", link.display(), found.display());
        std::os::unix::fs::symlink(&found, &link)?;
        notes.push(format!("linked {soname}"));
    }
    let still = unresolved(lib)?;
    if !still.is_empty() {
        return Err(format!("{} still cannot find: {}", lib.display(), still.join(" ")).into());
    }
    let icd = Path::new(INTEL_ICD);
    let wrote = privilege.write_file(icd, &format!("{}\n", lib.display()))?;
    notes.push(format!(
        "{} {} -> {} (dependencies resolve via its RUNPATH $ORIGIN; ldd: all found)",
        if wrote {
            "wrote"
        } else {
            "already registered:"
        },
        icd.display(),
        lib.display()
    ));
    Ok(notes.join("; "))
}

/// Platform names from `clinfo -l` (run with a time limit: a broken driver can hang it).
pub(crate) fn platforms() -> Option<Vec<String>> {
    if !util::on_path("clinfo") {
        return None;
    }
    let out = util::output(Command::new("timeout").args(["120", "clinfo", "-l"]))?;
    Some(parse_platform_list(&out))
}

/// The platform names in `clinfo -l` output (`Platform #0: NAME` lines).
fn parse_platform_list(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("Platform #"))
        .filter_map(|l| l.split_once(": ").map(|(_, name)| name.trim().to_owned()))
        .collect()
}

fn verify() -> Result<String> {
    let found = platforms().ok_or("`clinfo -l` failed")?;
    let missing: Vec<&str> = EXPECTED_PLATFORMS
        .iter()
        .copied()
        .filter(|p| !found.iter().any(|f| f == p))
        .filter(|p| std::env::consts::ARCH == "x86_64" || !p.starts_with("Intel"))
        .collect();
    if missing.is_empty() {
        Ok(format!("{} platform(s): {}", found.len(), found.join(", ")))
    } else {
        Err(format!(
            "clinfo -l lists [{}] but not [{}]",
            found.join(", "),
            missing.join(", ")
        )
        .into())
    }
}

/// Runs setup unless `clinfo -l` already shows at least one platform.
pub(crate) fn ensure_platform() -> Result {
    match platforms() {
        Some(p) if !p.is_empty() => Ok(()),
        _ => {
            println!("no OpenCL platform found (clinfo -l): running `cargo xtask setup` first");
            run()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_install_is_noninteractive_through_sudo() {
        let cmd = apt_install(Privilege::Sudo, "x").unwrap();
        assert_eq!(
            util::show(&cmd),
            "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"
        );
        assert!(apt_install(Privilege::None, "install things").is_err());
    }

    #[test]
    fn clinfo_list_yields_platform_names() {
        let out = "Platform #0: Oclgrind\n `-- Device #0: Oclgrind Simulator\nPlatform #1: Portable Computing Language\n `-- Device #0: pthread\n";
        assert_eq!(
            parse_platform_list(out),
            ["Oclgrind", "Portable Computing Language"]
        );
        assert!(parse_platform_list("").is_empty());
    }
}
