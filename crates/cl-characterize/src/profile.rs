//! The plain-data description of a device: every fact PyOpenCL's heuristics read.
//!
//! A [`DeviceProfile`] is filled by hand, deserialized from a recorded JSON file (feature `serde`), or
//! read from a live device (feature `probe`, [`crate::probe`]). The heuristics never talk to a driver:
//! they read only this struct, so they run the same on a recorded profile as on the device itself.

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// `CL_DEVICE_TYPE_CPU`.
pub(crate) const DEVICE_TYPE_CPU: u64 = 2;
/// `CL_DEVICE_TYPE_GPU`.
pub(crate) const DEVICE_TYPE_GPU: u64 = 4;

/// `CL_DEVICE_TYPE_*` names and bits in `dir(cl.device_type)` order, with the two extra class
/// attributes PyOpenCL's `to_string` also matches: `ALL` and the monkeypatched `_is_bitfield`.
const PYOPENCL_DEVICE_TYPE_ATTRS: [(&str, u64); 7] = [
    ("ACCELERATOR", 8),
    ("ALL", 0xFFFF_FFFF),
    ("CPU", 2),
    ("CUSTOM", 16),
    ("DEFAULT", 1),
    ("GPU", 4),
    ("_is_bitfield", 1),
];

/// The string PyOpenCL's `cl.device_type.to_string(bits)` gives, byte for byte.
///
/// PyOpenCL lists, in `dir()` order, every class attribute that is an `int` and either equals the
/// value or shares a bit with it. `ALL` (0xFFFFFFFF) therefore always appears, and the
/// monkeypatched marker `_is_bitfield = True` (an `int` equal to 1) appears for every odd value:
/// Oclgrind's 15 renders as `"ACCELERATOR | ALL | CPU | DEFAULT | GPU | _is_bitfield"` (reference
/// §9 item 21). The report keeps this text under the PyOpenCL-compatible `type` key so its JSON
/// compares equal; [`device_type_names`] is the clean list.
pub(crate) fn device_type_pyopencl_string(bits: u64) -> String {
    let names: Vec<&str> = PYOPENCL_DEVICE_TYPE_ATTRS
        .iter()
        .filter(|(_, attr)| *attr == bits || attr & bits != 0)
        .map(|(name, _)| *name)
        .collect();
    if names.is_empty() {
        // PyOpenCL raises ValueError here; the report only needs a readable stand-in.
        format!("<unknown device type {bits}>")
    } else {
        names.join(" | ")
    }
}

/// The names of the set `CL_DEVICE_TYPE_*` bits, lowest bit first (`["CPU"]`, `["DEFAULT", "CPU",
/// "GPU", "ACCELERATOR"]`), with unknown bits as a hexadecimal number.
pub(crate) fn device_type_names(bits: u64) -> Vec<String> {
    const NAMES: [(&str, u64); 5] = [
        ("DEFAULT", 1),
        ("CPU", 2),
        ("GPU", 4),
        ("ACCELERATOR", 8),
        ("CUSTOM", 16),
    ];
    let mut out: Vec<String> = NAMES
        .iter()
        .filter(|(_, bit)| bits & bit != 0)
        .map(|(name, _)| (*name).to_owned())
        .collect();
    let unknown = bits & !0x1F;
    if unknown != 0 {
        out.push(format!("{unknown:#x}"));
    }
    out
}

/// `CL_DEVICE_LOCAL_MEM_TYPE`: whether `__local` memory is dedicated or carved from global memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum LocalMemType {
    /// `CL_NONE` (0): no local memory (custom devices only).
    None,
    /// `CL_LOCAL` (1): dedicated local memory, e.g. GPU shared memory.
    #[default]
    Local,
    /// `CL_GLOBAL` (2): local memory is cache-backed global memory (every CPU runtime).
    Global,
    /// A value the specification does not define.
    Unknown(u32),
}

impl LocalMemType {
    /// The value for a raw `cl_device_local_mem_type`.
    pub const fn from_raw(raw: u32) -> Self {
        match raw {
            0 => Self::None,
            1 => Self::Local,
            2 => Self::Global,
            other => Self::Unknown(other),
        }
    }
}

/// `CL_DEVICE_SVM_COARSE_GRAIN_BUFFER`.
pub(crate) const SVM_COARSE_GRAIN_BUFFER: u64 = 1;
/// `CL_DEVICE_SVM_FINE_GRAIN_BUFFER`.
pub(crate) const SVM_FINE_GRAIN_BUFFER: u64 = 2;
/// `CL_DEVICE_SVM_FINE_GRAIN_SYSTEM`.
pub(crate) const SVM_FINE_GRAIN_SYSTEM: u64 = 4;
/// `CL_DEVICE_SVM_ATOMICS`.
pub(crate) const SVM_ATOMICS: u64 = 8;

/// The platform facts PyOpenCL's heuristics read (`dev.platform.name`, `.vendor`, `.version`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct PlatformProfile {
    /// `CL_PLATFORM_NAME`, e.g. `"Portable Computing Language"`, `"NVIDIA CUDA"`.
    pub name: String,
    /// `CL_PLATFORM_VENDOR`, e.g. `"The pocl project"`, `"Advanced Micro Devices, Inc."`.
    pub vendor: String,
    /// `CL_PLATFORM_VERSION`, e.g. `"OpenCL 3.0 PoCL 3.1+debian  Linux, ..."`.
    pub version: String,
}

/// Every fact about one device that `pyopencl.characterize` reads, plus the facts its queried
/// alternatives read, as plain data.
///
/// Other toolkits (opencl3, ocl, a Vulkan stack, a recorded JSON file) fill this by hand; the
/// `probe` feature fills it from a live device. Optional vendor facts are `None` when the device
/// does not advertise the extension that defines them: that is exactly the case where PyOpenCL's
/// `try: dev.warp_size_nv ... except` falls through.
///
/// The two kernel-probe results ([`DeviceProfile::kernel_preferred_work_group_size_multiple`] and
/// [`DeviceProfile::pocl_struct_arg_count_bug`]) are facts PyOpenCL obtains by building a kernel; a
/// heuristic that needs one that is `None` returns [`crate::CharacterizeError::ProbeRequired`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct DeviceProfile {
    /// The device's platform.
    pub platform: PlatformProfile,
    /// `CL_DEVICE_NAME`.
    pub name: String,
    /// `CL_DEVICE_VENDOR`, e.g. `"NVIDIA Corporation"`, `"Intel(R) Corporation"`, `"GenuineIntel"`.
    pub vendor: String,
    /// `CL_DEVICE_VERSION`, e.g. `"OpenCL 3.0 CUDA"`.
    pub version: String,
    /// `CL_DRIVER_VERSION`.
    pub driver_version: String,
    /// `CL_DEVICE_TYPE` bits, as the driver reports them (`cl_device_type`): `CL_DEVICE_TYPE_DEFAULT`
    /// 1, `CPU` 2, `GPU` 4, `ACCELERATOR` 8, `CUSTOM` 16. Several may be set (Oclgrind reports 15);
    /// PyOpenCL tests single bits (`dev.type & cl.device_type.GPU`), and so do the heuristics.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub device_type: u64,
    /// `CL_DEVICE_EXTENSIONS`, verbatim. PyOpenCL splits it on single spaces (`split(" ")`), so
    /// the raw string is kept: some drivers put several spaces between names.
    pub extensions: String,
    /// `CL_DEVICE_LOCAL_MEM_TYPE`.
    pub local_mem_type: LocalMemType,
    /// `CL_DEVICE_LOCAL_MEM_SIZE` in bytes.
    pub local_mem_size: u64,
    /// `CL_DEVICE_SVM_CAPABILITIES` bits (`cl_device_svm_capabilities`: `COARSE_GRAIN_BUFFER` 1,
    /// `FINE_GRAIN_BUFFER` 2, `FINE_GRAIN_SYSTEM` 4, `ATOMICS` 8); `None` where the device cannot
    /// report it (device version below 2.0). PyOpenCL reads it only when the *platform* version (or the PoCL version) allows
    /// SVM, so `None` matters only for an old device on a newer platform.
    pub svm_capabilities: Option<u64>,
    /// `(CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, _MINOR_NV)` (`cl_nv_device_attribute_query`).
    pub nv_compute_capability: Option<(u32, u32)>,
    /// `CL_DEVICE_WARP_SIZE_NV` (`cl_nv_device_attribute_query`).
    pub nv_warp_size: Option<u32>,
    /// `CL_DEVICE_WAVEFRONT_WIDTH_AMD` (`cl_amd_device_attribute_query`).
    pub amd_wavefront_width: Option<u32>,
    /// `CL_DEVICE_SIMD_WIDTH_AMD` (`cl_amd_device_attribute_query`).
    pub amd_simd_width: Option<u32>,
    /// `CL_DEVICE_LOCAL_MEM_BANKS_AMD` (`cl_amd_device_attribute_query`).
    pub amd_local_mem_banks: Option<u32>,
    /// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`).
    pub intel_sub_group_sizes: Option<Vec<usize>>,
    /// `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` (a device query since OpenCL 3.0).
    pub preferred_work_group_size_multiple: Option<usize>,
    /// Probe result: `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` of PyOpenCL's trivial kernel
    /// `__kernel void knl(__global float *a){ a[get_global_id(0)] = 0; }`.
    pub kernel_preferred_work_group_size_multiple: Option<usize>,
    /// Probe result: whether `struct two_things { long a; long b; }; __kernel void
    /// test_knl(struct two_things x) {}` reports a `CL_KERNEL_NUM_ARGS` of 2 (the PoCL < 0.14 bug).
    pub pocl_struct_arg_count_bug: Option<bool>,
}

impl DeviceProfile {
    /// Whether the `CL_DEVICE_TYPE_GPU` bit is set (PyOpenCL's `dev.type & cl.device_type.GPU`).
    pub(crate) fn is_gpu(&self) -> bool {
        self.device_type & DEVICE_TYPE_GPU != 0
    }

    /// Whether the `CL_DEVICE_TYPE_CPU` bit is set.
    pub(crate) fn is_cpu(&self) -> bool {
        self.device_type & DEVICE_TYPE_CPU != 0
    }

    /// Whether `name` is one of the extension tokens, split exactly as PyOpenCL does
    /// (`name in dev.extensions.split(" ")`).
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.split(' ').any(|token| token == name)
    }
}

/// Parses an OpenCL version string the way PyOpenCL's `_get_cl_version()` does: the regular
/// expression `^OpenCL ([0-9]+)\.([0-9]+) .*$` (note the space required after the minor number).
///
/// Returns `None` when the string does not match (PyOpenCL raises `RuntimeError` then) or a number
/// does not fit in a `u32`.
pub(crate) fn parse_cl_version(version: &str) -> Option<(u32, u32)> {
    let rest = version.strip_prefix("OpenCL ")?;
    let (major, rest) = leading_digits(rest)?;
    let rest = rest.strip_prefix('.')?;
    let (minor, rest) = leading_digits(rest)?;
    let rest = rest.strip_prefix(' ')?;
    // `.*$`: `.` matches anything but '\n'; `$` also matches before one final '\n'.
    let rest = rest.strip_suffix('\n').unwrap_or(rest);
    if rest.contains('\n') {
        return None;
    }
    Some((major, minor))
}

/// Splits off a non-empty run of ASCII digits (`[0-9]+`, greedy) and parses it.
pub(crate) fn leading_digits(s: &str) -> Option<(u32, &str)> {
    let end = s.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return None;
    }
    let value = s[..end].parse().ok()?;
    Some((value, &s[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cl_version_parses_like_pyopencl() {
        assert_eq!(parse_cl_version("OpenCL 3.0 CUDA 13.0.98"), Some((3, 0)));
        assert_eq!(
            parse_cl_version("OpenCL 1.2 (Oclgrind 21.10)"),
            Some((1, 2))
        );
        assert_eq!(parse_cl_version("OpenCL 3.1 LINUX"), Some((3, 1)));
        // The regex needs a space after the minor number.
        assert_eq!(parse_cl_version("OpenCL 3.0"), None);
        assert_eq!(parse_cl_version("OpenCL 2.1 "), Some((2, 1)));
        assert_eq!(parse_cl_version("OpenCL 2.1 x\n"), Some((2, 1)));
        assert_eq!(parse_cl_version("OpenCL 2.1 x\ny"), None);
        assert_eq!(parse_cl_version("OpenCL x.1 y"), None);
        assert_eq!(parse_cl_version("opencl 1.2 y"), None);
    }

    #[test]
    fn device_type_string_matches_pyopencl_to_string() {
        assert_eq!(device_type_pyopencl_string(DEVICE_TYPE_GPU), "ALL | GPU");
        assert_eq!(device_type_pyopencl_string(DEVICE_TYPE_CPU), "ALL | CPU");
        assert_eq!(
            device_type_pyopencl_string(15),
            "ACCELERATOR | ALL | CPU | DEFAULT | GPU | _is_bitfield"
        );
        assert_eq!(
            device_type_names(15),
            ["DEFAULT", "CPU", "GPU", "ACCELERATOR"]
        );
    }

    #[test]
    fn extensions_split_on_single_spaces() {
        let p = DeviceProfile {
            extensions: "cl_a   cl_khr_fp64 cl_b ".into(),
            ..DeviceProfile::default()
        };
        assert!(p.has_extension("cl_khr_fp64"));
        assert!(!p.has_extension("cl_khr"));
        assert!(!p.has_extension("cl_amd_fp64"));
    }
}
