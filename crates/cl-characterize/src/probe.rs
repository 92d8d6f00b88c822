//! Fills a [`DeviceProfile`] from a live device and runs PyOpenCL's two kernel probes (feature
//! `probe`).
//!
//! Every query goes through `cl-raw`'s thin wrappers. The rules PyOpenCL leaves to luck are checked
//! here before calling the driver:
//!
//! - **Version gates.** `CL_DEVICE_SVM_CAPABILITIES` is read only from devices of OpenCL 2.0 or
//!   newer, `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` only from 3.0 devices: an OpenCL 1.2
//!   platform (Oclgrind 21.10) can hang on newer queries instead of failing.
//! - **Vendor attributes only when advertised.** The NVIDIA attributes are read only when the
//!   device lists `cl_nv_device_attribute_query`, the AMD ones with
//!   `cl_amd_device_attribute_query`, the Intel sub-group sizes with
//!   `cl_intel_required_subgroup_size`. (PyOpenCL asks and catches the exception; some drivers
//!   misbehave on unknown parameters.)
//!
//! The two kernel probes are PyOpenCL's, with its exact sources, run when
//! [`ProbeOptions::kernel_probes`] is on (the default):
//!
//! - [`DeviceProfile::kernel_preferred_work_group_size_multiple`] is
//!   `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` of
//!   `__kernel void knl(__global float *a){ a[get_global_id(0)] = 0; }`
//!   (`reasonable_work_group_size_multiple`);
//! - [`DeviceProfile::pocl_struct_arg_count_bug`] is whether `test_knl(struct two_things x)` reports
//!   2 arguments (`_check_for_pocl_arg_count_bug`).
//!
//! A failed optional query or probe leaves its field `None` and adds a note to
//! [`ProbedDevice::notes`]; the heuristics then say which fact is missing instead of guessing.

// The only module of this crate with `unsafe` (allowed at its `mod` line): every call below goes
// to a `cl-raw` wrapper, which is an `unsafe fn` because it takes raw handles. Each block says why
// its handles are valid.

use std::ffi::CStr;

use cl_raw::object::{self, Object};
use cl_raw::sys;
use cl_raw::ClError;

use crate::profile::{DeviceProfile, LocalMemType, PlatformProfile};

/// PyOpenCL's `reasonable_work_group_size_multiple` kernel, byte for byte.
const WORK_GROUP_MULTIPLE_KERNEL: &str = "
        __kernel void knl(__global float *a)
        {
            a[get_global_id(0)] = 0;
        }
        ";

/// PyOpenCL's `_check_for_pocl_arg_count_bug` kernel, byte for byte.
const STRUCT_ARG_COUNT_KERNEL: &str = "
            struct two_things
            {
                long a;
                long b;
            };

            __kernel void test_knl(struct two_things x)
            {
            }
            ";

/// Which probes [`profile_device`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeOptions {
    /// Build PyOpenCL's two probe kernels (a context and two programs per device).
    pub kernel_probes: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            kernel_probes: true,
        }
    }
}

/// Why a device could not be profiled at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A query every OpenCL 1.0 device answers failed.
    #[error("{call}({param}) failed: {source}")]
    Query {
        /// The C function.
        call: &'static str,
        /// The parameter name.
        param: &'static str,
        /// The driver's status.
        source: ClError,
    },
    /// `clGetPlatformIDs` failed (`CL_PLATFORM_NOT_FOUND_KHR` when no ICD is registered).
    #[error("clGetPlatformIDs failed: {0}")]
    Platforms(ClError),
    /// The device selector is malformed or matches nothing.
    #[error(transparent)]
    Select(#[from] cl_raw::select::SelectError),
}

/// General facts about a device that the report shows next to the characterization. No heuristic
/// reads them, so they are not part of [`DeviceProfile`] (nor of the recorded profiles).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct DeviceBasics {
    /// `CL_DEVICE_MAX_COMPUTE_UNITS`.
    pub max_compute_units: u32,
    /// `CL_DEVICE_GLOBAL_MEM_SIZE`, bytes.
    pub global_mem_size: u64,
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, bytes.
    pub max_mem_alloc_size: u64,
    /// `CL_DEVICE_MAX_WORK_GROUP_SIZE`.
    pub max_work_group_size: usize,
    /// `CL_DEVICE_LOCAL_MEM_SIZE`, bytes.
    pub local_mem_size: u64,
    /// `CL_DEVICE_IMAGE_SUPPORT`.
    pub image_support: bool,
    /// `CL_DEVICE_IMAGE2D_MAX_WIDTH`, `_HEIGHT` (0 without image support).
    pub image2d_max: [usize; 2],
    /// `CL_DEVICE_IMAGE3D_MAX_WIDTH`, `_HEIGHT`, `_DEPTH` (0 without image support).
    pub image3d_max: [usize; 3],
    /// `CL_DEVICE_OPENCL_C_VERSION` (OpenCL 1.1+; `None` where the query failed).
    pub opencl_c_version: Option<String>,
}

/// Reads [`DeviceBasics`] (OpenCL 1.0 queries, plus `CL_DEVICE_OPENCL_C_VERSION`, 1.1).
///
/// # Errors
///
/// [`ProbeError::Query`] when an OpenCL 1.0 query fails.
///
/// # Safety
///
/// 1. `device` is a valid device id for the whole call (as for [`profile_device`]).
unsafe fn device_basics(device: sys::cl_device_id) -> Result<DeviceBasics, ProbeError> {
    let image_support: bool = required(
        device,
        sys::CL_DEVICE_IMAGE_SUPPORT,
        "CL_DEVICE_IMAGE_SUPPORT",
    )?;
    let size = |param, name| required::<usize>(device, param, name);
    let (image2d_max, image3d_max) = if image_support {
        (
            [
                size(
                    sys::CL_DEVICE_IMAGE2D_MAX_WIDTH,
                    "CL_DEVICE_IMAGE2D_MAX_WIDTH",
                )?,
                size(
                    sys::CL_DEVICE_IMAGE2D_MAX_HEIGHT,
                    "CL_DEVICE_IMAGE2D_MAX_HEIGHT",
                )?,
            ],
            [
                size(
                    sys::CL_DEVICE_IMAGE3D_MAX_WIDTH,
                    "CL_DEVICE_IMAGE3D_MAX_WIDTH",
                )?,
                size(
                    sys::CL_DEVICE_IMAGE3D_MAX_HEIGHT,
                    "CL_DEVICE_IMAGE3D_MAX_HEIGHT",
                )?,
                size(
                    sys::CL_DEVICE_IMAGE3D_MAX_DEPTH,
                    "CL_DEVICE_IMAGE3D_MAX_DEPTH",
                )?,
            ],
        )
    } else {
        ([0; 2], [0; 3])
    };
    Ok(DeviceBasics {
        max_compute_units: required(
            device,
            sys::CL_DEVICE_MAX_COMPUTE_UNITS,
            "CL_DEVICE_MAX_COMPUTE_UNITS",
        )?,
        global_mem_size: required(
            device,
            sys::CL_DEVICE_GLOBAL_MEM_SIZE,
            "CL_DEVICE_GLOBAL_MEM_SIZE",
        )?,
        max_mem_alloc_size: required(
            device,
            sys::CL_DEVICE_MAX_MEM_ALLOC_SIZE,
            "CL_DEVICE_MAX_MEM_ALLOC_SIZE",
        )?,
        max_work_group_size: size(
            sys::CL_DEVICE_MAX_WORK_GROUP_SIZE,
            "CL_DEVICE_MAX_WORK_GROUP_SIZE",
        )?,
        local_mem_size: required(
            device,
            sys::CL_DEVICE_LOCAL_MEM_SIZE,
            "CL_DEVICE_LOCAL_MEM_SIZE",
        )?,
        image_support,
        image2d_max,
        image3d_max,
        // SAFETY: valid device (obligation 1); a 1.0 device answers CL_INVALID_VALUE, which
        // becomes `None` (no 1.0 runtime is known to hang on it).
        opencl_c_version: unsafe {
            cl_raw::device::get_info::<String>(device, sys::CL_DEVICE_OPENCL_C_VERSION)
        }
        .ok(),
    })
}

/// One device's profile, where it was found, and what could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbedDevice {
    /// Index of the platform in `clGetPlatformIDs` order.
    pub platform_index: usize,
    /// Index of the device within its platform (`CL_DEVICE_TYPE_ALL`).
    pub device_index: usize,
    /// The facts.
    pub profile: DeviceProfile,
    /// General facts for the report (`None` when one of their queries failed: see `notes`).
    pub basics: Option<DeviceBasics>,
    /// Optional facts or probes that failed, one line each (`"kernel probe knl: CL_BUILD_PROGRAM_FAILURE"`).
    pub notes: Vec<String>,
}

/// Every device `selector` picks (the grammar of `CL_TEST` / `PYOPENCL_TEST`, [`cl_raw::select`]),
/// profiled, in selection order; `""` picks every device of every platform. A device that cannot
/// be listed or profiled is reported in the error list instead, so one broken ICD does not hide
/// the others; [`ProbedDevice::basics`] holds the general facts the report shows.
///
/// # Errors
///
/// [`ProbeError::Platforms`] when `clGetPlatformIDs` fails (`CL_PLATFORM_NOT_FOUND_KHR` when no
/// ICD is registered), [`ProbeError::Select`] when the selector is malformed or matches nothing
/// (the message lists what is available).
pub fn profile_selected(
    selector: &str,
    options: ProbeOptions,
) -> Result<(Vec<ProbedDevice>, Vec<String>), ProbeError> {
    let selector = cl_raw::select::Selector::parse(selector)?;
    let platforms = cl_raw::platform::get_ids().map_err(ProbeError::Platforms)?;
    let mut errors = Vec::new();
    let mut catalogue = Vec::new();
    let mut ids = Vec::new();
    for (pi, &platform) in platforms.iter().enumerate() {
        // SAFETY: `platform` was just returned by clGetPlatformIDs.
        let devices = unsafe { cl_raw::device::get_ids(platform, sys::CL_DEVICE_TYPE_ALL) }
            .unwrap_or_else(|e| {
                errors.push(format!("platform {pi}: clGetDeviceIDs failed: {e}"));
                Vec::new()
            });
        // A name that cannot be read matches only by index.
        let name = |d, param, what| required::<String>(d, param, what).unwrap_or_default();
        catalogue.push(cl_raw::select::PlatformEntry {
            name: platform_string(platform, sys::CL_PLATFORM_NAME, "CL_PLATFORM_NAME")
                .unwrap_or_default(),
            vendor: platform_string(platform, sys::CL_PLATFORM_VENDOR, "CL_PLATFORM_VENDOR")
                .unwrap_or_default(),
            devices: devices
                .iter()
                .map(|&d| {
                    (
                        name(d, sys::CL_DEVICE_NAME, "CL_DEVICE_NAME"),
                        name(d, sys::CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR"),
                    )
                })
                .collect(),
        });
        ids.push(devices);
    }
    let mut found = Vec::new();
    for (pi, di) in selector.resolve(&catalogue)? {
        probe_into(pi, di, ids[pi][di], options, &mut found, &mut errors);
    }
    Ok((found, errors))
}

/// Profiles one listed device (and its basics) into `found`, or its failure into `errors`.
fn probe_into(
    pi: usize,
    di: usize,
    device: sys::cl_device_id,
    options: ProbeOptions,
    found: &mut Vec<ProbedDevice>,
    errors: &mut Vec<String>,
) {
    // SAFETY: `device` was returned by clGetDeviceIDs for a valid platform (root devices are not
    // reference counted and stay valid).
    match unsafe { profile_device(device, options) } {
        Ok((profile, mut notes)) => {
            // SAFETY: as above.
            let basics = unsafe { device_basics(device) }
                .map_err(|e| notes.push(format!("device basics: {e}")))
                .ok();
            found.push(ProbedDevice {
                platform_index: pi,
                device_index: di,
                profile,
                basics,
                notes,
            });
        }
        Err(e) => errors.push(format!("platform {pi} device {di}: {e}")),
    }
}

fn required<T: cl_raw::InfoValue>(
    device: sys::cl_device_id,
    param: sys::cl_device_info,
    name: &'static str,
) -> Result<T, ProbeError> {
    // SAFETY: `profile_device`'s caller guarantees a valid device; every `param` passed here is an
    // OpenCL 1.0 query.
    unsafe { cl_raw::device::get_info(device, param) }.map_err(failed("clGetDeviceInfo", name))
}

fn platform_string(
    platform: sys::cl_platform_id,
    param: sys::cl_platform_info,
    name: &'static str,
) -> Result<String, ProbeError> {
    // SAFETY: `platform` came from CL_DEVICE_PLATFORM of a valid device; OpenCL 1.0 query.
    unsafe { cl_raw::platform::get_info(platform, param) }
        .map_err(failed("clGetPlatformInfo", name))
}

/// The error of a failed `call` of the query for `param`.
fn failed(call: &'static str, param: &'static str) -> impl FnOnce(ClError) -> ProbeError {
    move |source| ProbeError::Query {
        call,
        param,
        source,
    }
}

/// The profile of a device of cl-mem's safe runtime (feature `cl-mem`): [`profile_device`] without
/// `unsafe`, since a `cl_mem::Device` always holds a valid id. PyOpenCL's characterize functions
/// then take the profile: `has_double_support(&profile)`, `get_simd_group_size(&profile, ..)`, ...
///
/// ```ignore
/// let (profile, notes) = cl_characterize::probe::profile(&device, ProbeOptions::default())?;
/// let banks = cl_characterize::local_memory_bank_count(&profile)?;
/// ```
///
/// # Errors
///
/// As [`profile_device`].
#[cfg(feature = "cl-mem")]
pub fn profile(
    device: &cl_mem::Device,
    options: ProbeOptions,
) -> Result<(DeviceProfile, Vec<String>), ProbeError> {
    // SAFETY: a `cl_mem::Device` holds a valid id for the process's life (the obligation of its
    // only constructor, `Device::from_raw`; sub-devices are kept alive by cl-mem).
    unsafe { profile_device(device.as_raw(), options) }
}

/// Reads every fact of a [`DeviceProfile`] from `device` and, with `options.kernel_probes`, runs
/// the two kernel probes. Returns the profile and a note for each optional fact that failed.
///
/// # Errors
///
/// [`ProbeError::Query`] when a query every device answers (name, vendor, versions, type,
/// extensions, local memory, platform) fails.
///
/// # Safety
///
/// 1. `device` is a valid device id (returned by `clGetDeviceIDs`, or a sub-device the caller
///    holds a reference to) for the whole call.
pub unsafe fn profile_device(
    device: sys::cl_device_id,
    options: ProbeOptions,
) -> Result<(DeviceProfile, Vec<String>), ProbeError> {
    let mut notes = Vec::new();
    let platform: sys::cl_platform_id =
        required(device, sys::CL_DEVICE_PLATFORM, "CL_DEVICE_PLATFORM")?;
    let mut p = DeviceProfile {
        platform: PlatformProfile {
            name: platform_string(platform, sys::CL_PLATFORM_NAME, "CL_PLATFORM_NAME")?,
            vendor: platform_string(platform, sys::CL_PLATFORM_VENDOR, "CL_PLATFORM_VENDOR")?,
            version: platform_string(platform, sys::CL_PLATFORM_VERSION, "CL_PLATFORM_VERSION")?,
        },
        name: required(device, sys::CL_DEVICE_NAME, "CL_DEVICE_NAME")?,
        vendor: required(device, sys::CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR")?,
        version: required(device, sys::CL_DEVICE_VERSION, "CL_DEVICE_VERSION")?,
        driver_version: required(device, sys::CL_DRIVER_VERSION, "CL_DRIVER_VERSION")?,
        device_type: required::<sys::cl_device_type>(
            device,
            sys::CL_DEVICE_TYPE,
            "CL_DEVICE_TYPE",
        )?,
        extensions: required(device, sys::CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS")?,
        local_mem_type: LocalMemType::from_raw(required::<sys::cl_device_local_mem_type>(
            device,
            sys::CL_DEVICE_LOCAL_MEM_TYPE,
            "CL_DEVICE_LOCAL_MEM_TYPE",
        )?),
        local_mem_size: required::<sys::cl_ulong>(
            device,
            sys::CL_DEVICE_LOCAL_MEM_SIZE,
            "CL_DEVICE_LOCAL_MEM_SIZE",
        )?,
        ..DeviceProfile::default()
    };

    // Gate newer queries on the device version; an unparsable version gets only 1.x queries.
    let device_version = cl_raw::Version::parse_platform(&p.version)
        .map(|v| (v.major, v.minor))
        .unwrap_or_else(|e| {
            notes.push(format!(
                "CL_DEVICE_VERSION: {e}; only OpenCL 1.x queries were made"
            ));
            (1, 0)
        });

    if device_version >= (2, 0) {
        // SAFETY: valid device (obligation 1); CL_DEVICE_SVM_CAPABILITIES exists from 2.0 on.
        match unsafe {
            cl_raw::device::get_info::<sys::cl_bitfield>(device, sys::CL_DEVICE_SVM_CAPABILITIES)
        } {
            Ok(bits) => p.svm_capabilities = Some(bits),
            Err(e) => notes.push(format!("CL_DEVICE_SVM_CAPABILITIES: {e}")),
        }
    }
    if device_version >= (3, 0) {
        // SAFETY: valid device; the parameter exists from OpenCL 3.0 on (gated above).
        match unsafe {
            cl_raw::device::get_info::<usize>(
                device,
                cl_raw::extra::CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
            )
        } {
            Ok(v) => p.preferred_work_group_size_multiple = Some(v),
            Err(e) => notes.push(format!("CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: {e}")),
        }
    }

    let vendor_u32 = |param: sys::cl_device_info, name: &str, notes: &mut Vec<String>| {
        // SAFETY: valid device; callers pass a vendor parameter only when the device lists the
        // extension that defines it.
        match unsafe { cl_raw::device::get_info::<sys::cl_uint>(device, param) } {
            Ok(v) => Some(v),
            Err(e) => {
                notes.push(format!("{name}: {e}"));
                None
            }
        }
    };
    if p.has_extension("cl_nv_device_attribute_query") {
        let major = vendor_u32(
            cl_raw::extra::CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV,
            "CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV",
            &mut notes,
        );
        let minor = vendor_u32(
            cl_raw::extra::CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV,
            "CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV",
            &mut notes,
        );
        p.nv_compute_capability = major.zip(minor);
        p.nv_warp_size = vendor_u32(
            cl_raw::extra::CL_DEVICE_WARP_SIZE_NV,
            "CL_DEVICE_WARP_SIZE_NV",
            &mut notes,
        );
    }
    if p.has_extension("cl_amd_device_attribute_query") {
        p.amd_wavefront_width = vendor_u32(
            cl_raw::extra::CL_DEVICE_WAVEFRONT_WIDTH_AMD,
            "CL_DEVICE_WAVEFRONT_WIDTH_AMD",
            &mut notes,
        );
        p.amd_simd_width = vendor_u32(
            cl_raw::extra::CL_DEVICE_SIMD_WIDTH_AMD,
            "CL_DEVICE_SIMD_WIDTH_AMD",
            &mut notes,
        );
        p.amd_local_mem_banks = vendor_u32(
            cl_raw::extra::CL_DEVICE_LOCAL_MEM_BANKS_AMD,
            "CL_DEVICE_LOCAL_MEM_BANKS_AMD",
            &mut notes,
        );
    }
    if p.has_extension("cl_intel_required_subgroup_size") {
        // SAFETY: valid device that lists cl_intel_required_subgroup_size, which defines it.
        match unsafe {
            cl_raw::device::get_info::<Vec<usize>>(
                device,
                cl_raw::extra::CL_DEVICE_SUB_GROUP_SIZES_INTEL,
            )
        } {
            Ok(v) => p.intel_sub_group_sizes = Some(v),
            Err(e) => notes.push(format!("CL_DEVICE_SUB_GROUP_SIZES_INTEL: {e}")),
        }
    }

    if options.kernel_probes {
        // SAFETY: valid device (obligation 1).
        match unsafe { kernel_preferred_work_group_size_multiple(device) } {
            Ok(v) => p.kernel_preferred_work_group_size_multiple = Some(v),
            Err(e) => notes.push(format!("kernel probe knl: {e}")),
        }
        // SAFETY: valid device (obligation 1).
        match unsafe { pocl_struct_arg_count_bug(device) } {
            Ok(v) => p.pocl_struct_arg_count_bug = Some(v),
            Err(e) => notes.push(format!("kernel probe test_knl: {e}")),
        }
    }
    Ok((p, notes))
}

/// Releases a context, program or kernel when dropped (errors are logged: nothing can be done).
struct Owned<H: Copy + Into<*mut std::ffi::c_void>> {
    handle: H,
    object: cl_raw::object::Object,
    what: &'static str,
}

impl<H: Copy + Into<*mut std::ffi::c_void>> Drop for Owned<H> {
    fn drop(&mut self) {
        // SAFETY: `handle` was created by this module, is owned by this guard (one reference) and
        // is released exactly once, here.
        if let Err(e) = unsafe { cl_raw::object::release(self.object, self.handle.into()) } {
            tracing::warn!(target: "cl_characterize", "releasing the probe {} failed: {e}", self.what);
        }
    }
}

impl<H: Copy + Into<*mut std::ffi::c_void>> std::fmt::Debug for Owned<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Owned({})", self.what)
    }
}

/// A built probe kernel and what it needs; fields drop in declaration order, so the kernel is
/// released before its program and the program before its context.
struct Built {
    kernel: Owned<sys::cl_kernel>,
    _program: Owned<sys::cl_program>,
    _context: Owned<sys::cl_context>,
}

/// Builds `source` for `device` alone (in a new context, as PyOpenCL does without `ctx`) and
/// creates kernel `name`.
///
/// # Safety
///
/// 1. `device` is a valid device id.
unsafe fn build(device: sys::cl_device_id, source: &str, name: &CStr) -> Result<Built, ClError> {
    // SAFETY: one valid device (obligation 1), no properties, no callback; we own the context.
    let context = unsafe { cl_raw::context::create(&[], &[device], None, std::ptr::null_mut()) }?;
    let context = Owned {
        handle: context,
        object: cl_raw::object::Object::Context,
        what: "context",
    };
    // SAFETY: `context` is valid; we own the program.
    let program = unsafe { cl_raw::program::create_with_source(context.handle, &[source]) }?;
    let program = Owned {
        handle: program,
        object: cl_raw::object::Object::Program,
        what: "program",
    };
    // SAFETY: valid program whose context holds `device`; blocking build (no callback).
    unsafe { cl_raw::program::build(program.handle, &[device], c"", None, std::ptr::null_mut()) }?;
    // SAFETY: valid, built program; we own the kernel.
    let kernel = unsafe { cl_raw::kernel::create(program.handle, name) }?;
    Ok(Built {
        kernel: Owned {
            handle: kernel,
            object: cl_raw::object::Object::Kernel,
            what: "kernel",
        },
        _program: program,
        _context: context,
    })
}

/// PyOpenCL's `reasonable_work_group_size_multiple` probe: builds [`WORK_GROUP_MULTIPLE_KERNEL`]
/// in a new context and returns its `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` (PoCL CPU 8,
/// Intel CPU 128, Oclgrind 1).
///
/// # Errors
///
/// The status of the failing call (context, build, kernel or query).
///
/// # Safety
///
/// 1. `device` is a valid device id.
unsafe fn kernel_preferred_work_group_size_multiple(
    device: sys::cl_device_id,
) -> Result<usize, ClError> {
    // SAFETY: obligation 1.
    let built = unsafe { build(device, WORK_GROUP_MULTIPLE_KERNEL, c"knl") }?;
    // SAFETY: valid kernel of a context holding `device`; an OpenCL 1.1 query.
    unsafe {
        cl_raw::kernel::get_work_group_info::<usize>(
            built.kernel.handle,
            device,
            sys::CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
        )
    }
}

/// PyOpenCL's `_check_for_pocl_arg_count_bug`: builds [`STRUCT_ARG_COUNT_KERNEL`] and returns
/// whether `CL_KERNEL_NUM_ARGS` is 2 (the struct counted as its two fields: pocl/pocl#197).
///
/// # Errors
///
/// The status of the failing call.
///
/// # Safety
///
/// 1. `device` is a valid device id.
unsafe fn pocl_struct_arg_count_bug(device: sys::cl_device_id) -> Result<bool, ClError> {
    // SAFETY: obligation 1.
    let built = unsafe { build(device, STRUCT_ARG_COUNT_KERNEL, c"test_knl") }?;
    // SAFETY: valid kernel; an OpenCL 1.0 query.
    let n: sys::cl_uint =
        unsafe { object::get_info(Object::Kernel, built.kernel.handle, sys::CL_KERNEL_NUM_ARGS) }?;
    Ok(n == 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cl_raw::select::SelectError;

    /// A malformed selector is refused before any driver call (the same answer with or without
    /// an OpenCL platform on the machine).
    #[test]
    fn a_malformed_selector_is_a_select_error() {
        for (selector, want) in [
            (
                "a:b:c",
                SelectError::Syntax {
                    entry: "a:b:c".into(),
                },
            ),
            (
                "port;",
                SelectError::Empty {
                    entry: String::new(),
                },
            ),
            (
                "port:",
                SelectError::Empty {
                    entry: "port:".into(),
                },
            ),
            (":0", SelectError::Empty { entry: ":0".into() }),
            (
                "port:0,",
                SelectError::Empty {
                    entry: "port:0,".into(),
                },
            ),
        ] {
            match profile_selected(selector, ProbeOptions::default()) {
                Err(ProbeError::Select(e)) => assert_eq!(e, want, "{selector:?}"),
                other => panic!("{selector:?}: {other:?}"),
            }
        }
    }
}
