//! Device selection with PyOpenCL's `PYOPENCL_TEST` grammar, for `CL_TEST` (test devices) and
//! `CL_CTX` (the device of [`create_some_context`]).
//!
//! # Grammar
//!
//! `entry(;entry)*`, each entry `platform` or `platform:device(,device)*`. A selector is an
//! integer index (negative counts from the end, as in Python) or else a case-insensitive substring
//! of `name + " " + vendor`; the **first** match wins. Order and duplicates are kept (`"1:0,0"`
//! selects the same device twice). A platform entry without devices selects all its devices.
//!
//! One grammar for both variables: PyOpenCL's `PYOPENCL_CTX` uses a different parser (name-only
//! matching, last match wins; PyOpenCL issue #781), which is deliberately not copied.
//!
//! Deliberate differences from PyOpenCL's parser: an empty entry or selector (`"port;"`,
//! `"port:"`, `"0:1,"`) is an error instead of silently matching the first object (the empty
//! string is a substring of every name); errors name the available platforms or devices.
//!
//! Parsing (`cl_mem::Selector::parse`) and resolution over names (`Selector::resolve`) are pure,
//! live in `cl_raw::select` and are tested without a device; [`select_devices`], [`test_devices`]
//! and [`create_some_context`] run them against the live platforms.

use crate::error::{Error, Result};
use crate::runtime::context::Context;
use crate::runtime::device::{Device, DeviceType};
use crate::runtime::platform::Platform;

// The grammar itself is pure and lives in cl-raw, so that cl-characterize's `cl-report` (which
// may not depend on cl-mem) selects devices with the same grammar.
use cl_raw::select::listing;
use cl_raw::select::{PlatformEntry, SelectError, Selector};

fn select_error(variable: &str) -> impl Fn(SelectError) -> Error + '_ {
    move |error| Error::Select {
        variable: variable.to_owned(),
        error,
    }
}

/// The live catalogue: every platform with its devices.
fn catalogue() -> Result<(Vec<PlatformEntry>, Vec<Vec<Device>>)> {
    let mut entries = Vec::new();
    let mut devices = Vec::new();
    for p in Platform::list()? {
        let devs = p.devices(DeviceType::ALL)?;
        entries.push(PlatformEntry {
            name: p.name()?,
            vendor: p.vendor()?,
            devices: devs
                .iter()
                .map(|d| Ok((d.name()?, d.vendor()?)))
                .collect::<Result<_>>()?,
        });
        devices.push(devs);
    }
    Ok((entries, devices))
}

/// A selected device with its place in the loader's enumeration: the `platform:device` index
/// form of the grammar, which pins exactly this device in a later selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Index in `clGetPlatformIDs`.
    pub platform_index: usize,
    /// Index in the platform's `clGetDeviceIDs(CL_DEVICE_TYPE_ALL)`.
    pub device_index: usize,
    /// The device.
    pub device: Device,
}

/// The devices a selector string picks among the live platforms, each with its indices (no
/// second enumeration needed to find them); `variable` names its source in errors (`"CL_TEST"`,
/// `"--device"`).
///
/// # Errors
///
/// [`Error::Select`] for a malformed selector, one that matches nothing, or no devices at all;
/// [`Error::Cl`] when the platforms cannot be queried.
pub fn select_devices(selector: &str, variable: &str) -> Result<Vec<Selected>> {
    let sel = Selector::parse(selector).map_err(select_error(variable))?;
    let (entries, devices) = catalogue()?;
    let picked = sel.resolve(&entries).map_err(select_error(variable))?;
    if picked.is_empty() {
        let available = listing(entries.iter().map(|p| (p.name.as_str(), p.vendor.as_str())));
        return Err(select_error(variable)(SelectError::NoDevices { available }));
    }
    Ok(picked
        .into_iter()
        .map(|(pi, di)| Selected {
            platform_index: pi,
            device_index: di,
            device: devices[pi][di],
        })
        .collect())
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The devices tests run on, with their indices: `CL_TEST`, else `PYOPENCL_TEST`, else every
/// device of every platform (PyOpenCL's `get_test_platforms_and_devices`).
///
/// # Errors
///
/// As [`select_devices`].
pub fn test_devices() -> Result<Vec<Selected>> {
    let (spec, variable) = test_selector(env_nonempty("CL_TEST"), env_nonempty("PYOPENCL_TEST"));
    select_devices(&spec, variable)
}

/// Which selector and variable [`test_devices`] uses: `CL_TEST` wins, `PYOPENCL_TEST` is the
/// fallback, neither selects everything (blank values count as unset).
fn test_selector(cl_test: Option<String>, pyopencl_test: Option<String>) -> (String, &'static str) {
    match (cl_test, pyopencl_test) {
        (Some(v), _) => (v, "CL_TEST"),
        (None, Some(v)) => (v, "PYOPENCL_TEST"),
        (None, None) => (String::new(), "CL_TEST"),
    }
}

/// A context on the device a program without configuration should use: the first device
/// `CL_CTX` selects; else the first `CL_TEST` (else `PYOPENCL_TEST`) selects; else the best
/// device present by [`DeviceRank`], the first one enumerated among equals (its device:
/// `create_some_context()?.devices()[0]`).
///
/// Differences from PyOpenCL's `create_some_context()`: it never prompts (PyOpenCL asks on a
/// terminal when several devices exist), it reads `CL_CTX`, then `CL_TEST` / `PYOPENCL_TEST`
/// (so an example run by the device matrix uses the matrix's device), and without them it
/// prefers a GPU, then an accelerator, then a CPU runtime, and a simulator (Oclgrind) last,
/// where PyOpenCL takes the first device of the first platform, whatever it is (Oclgrind on a
/// machine where it is registered first: a vector add then takes a minute instead of seconds).
/// The choice and its reason are logged (`tracing`, target `cl_mem::select`, level `info`).
///
/// # Errors
///
/// As [`select_devices`] (a malformed or unmatched selector, no devices at all), plus
/// [`Context::new`]'s errors.
pub fn create_some_context() -> Result<Context> {
    let device = default_device()?;
    Context::new(&[device])
}

/// The device [`create_some_context`] uses.
fn default_device() -> Result<Device> {
    if let Some(v) = env_nonempty("CL_CTX") {
        let d = select_devices(&v, "CL_CTX")?[0].device;
        tracing::info!(target: "cl_mem::select", device = %describe(&d), selector = %v, "device chosen by CL_CTX");
        return Ok(d);
    }
    let (spec, variable) = test_selector(env_nonempty("CL_TEST"), env_nonempty("PYOPENCL_TEST"));
    if !spec.is_empty() {
        let d = select_devices(&spec, variable)?[0].device;
        tracing::info!(target: "cl_mem::select", device = %describe(&d), selector = %spec, variable, "device chosen by the test selector");
        return Ok(d);
    }
    // `select_devices` refuses an empty catalogue, so there is a first device; the minimum by
    // rank keeps the first enumerated among equals.
    let all = select_devices("", "CL_CTX")?;
    let (rank, d) = all
        .into_iter()
        .map(|s| (DeviceRank::of(&s.device), s.device))
        .enumerate()
        .min_by_key(|(i, (r, _))| (*r, *i))
        .map(|(_, x)| x)
        .ok_or_else(|| Error::InvalidArgument("no OpenCL device".into()))?;
    tracing::info!(target: "cl_mem::select", device = %describe(&d), ?rank, "device chosen by preference (set CL_CTX to choose)");
    Ok(d)
}

/// How [`create_some_context`] orders devices when nothing selects one: lower is preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceRank {
    /// A GPU.
    Gpu,
    /// An accelerator.
    Accelerator,
    /// A CPU runtime (PoCL, the Intel CPU runtime).
    Cpu,
    /// Anything else, or a device whose type cannot be read.
    Other,
    /// A simulator (Oclgrind: correct, and orders of magnitude slower).
    Simulator,
}

impl DeviceRank {
    /// The rank of `device`.
    pub fn of(device: &Device) -> DeviceRank {
        let name = device.name().unwrap_or_default();
        let platform = device.platform().name().unwrap_or_default();
        if is_simulator(&name) || is_simulator(&platform) {
            return DeviceRank::Simulator;
        }
        match device.device_type() {
            Ok(t) if t.contains(DeviceType::GPU) => DeviceRank::Gpu,
            Ok(t) if t.contains(DeviceType::ACCELERATOR) => DeviceRank::Accelerator,
            Ok(t) if t.contains(DeviceType::CPU) => DeviceRank::Cpu,
            _ => DeviceRank::Other,
        }
    }
}

fn is_simulator(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("oclgrind") || n.contains("simulator")
}

fn describe(d: &Device) -> String {
    let platform = d.platform().name().unwrap_or_default();
    format!("{} ({platform})", d.name().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cl_test_wins_over_pyopencl_test() {
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            test_selector(s("port"), s("intel")),
            ("port".into(), "CL_TEST")
        );
        assert_eq!(
            test_selector(None, s("intel")),
            ("intel".into(), "PYOPENCL_TEST")
        );
        assert_eq!(test_selector(None, None), (String::new(), "CL_TEST"));
    }
}
