//! [`Device`]: one compute device, with every fact later layers need, queried directly from the
//! driver (spec-defined facts only; heuristics live in `cl-characterize`).

use std::fmt;

use bitflags::bitflags;
use cl_raw::{device as raw, sys, InfoValue, Version};

use crate::error::{Error, Result};
use crate::runtime::extra;
use crate::runtime::platform::Platform;

bitflags! {
    /// `cl_device_type` bits. Oclgrind reports every bit set.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct DeviceType: sys::cl_device_type {
        /// `CL_DEVICE_TYPE_DEFAULT`.
        const DEFAULT = sys::CL_DEVICE_TYPE_DEFAULT;
        /// `CL_DEVICE_TYPE_CPU`.
        const CPU = sys::CL_DEVICE_TYPE_CPU;
        /// `CL_DEVICE_TYPE_GPU`.
        const GPU = sys::CL_DEVICE_TYPE_GPU;
        /// `CL_DEVICE_TYPE_ACCELERATOR`.
        const ACCELERATOR = sys::CL_DEVICE_TYPE_ACCELERATOR;
        /// `CL_DEVICE_TYPE_CUSTOM` (1.2).
        const CUSTOM = sys::CL_DEVICE_TYPE_CUSTOM;
        /// `CL_DEVICE_TYPE_ALL`: every bit, for `clGetDeviceIDs`.
        const ALL = sys::CL_DEVICE_TYPE_ALL;
    }
}

bitflags! {
    /// `cl_device_svm_capabilities` (`CL_DEVICE_SVM_CAPABILITIES`, OpenCL 2.0; may be empty on
    /// 3.0 devices, and is empty for devices older than 2.0).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SvmCapabilities: sys::cl_device_svm_capabilities {
        /// `CL_DEVICE_SVM_COARSE_GRAIN_BUFFER`.
        const COARSE_GRAIN_BUFFER = sys::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
        /// `CL_DEVICE_SVM_FINE_GRAIN_BUFFER`.
        const FINE_GRAIN_BUFFER = sys::CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
        /// `CL_DEVICE_SVM_FINE_GRAIN_SYSTEM`.
        const FINE_GRAIN_SYSTEM = sys::CL_DEVICE_SVM_FINE_GRAIN_SYSTEM;
        /// `CL_DEVICE_SVM_ATOMICS`.
        const ATOMICS = sys::CL_DEVICE_SVM_ATOMICS;
    }
}

bitflags! {
    /// `cl_device_atomic_capabilities` (OpenCL 3.0).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AtomicCapabilities: extra::cl_device_atomic_capabilities {
        /// `CL_DEVICE_ATOMIC_ORDER_RELAXED`.
        const ORDER_RELAXED = extra::CL_DEVICE_ATOMIC_ORDER_RELAXED;
        /// `CL_DEVICE_ATOMIC_ORDER_ACQ_REL`.
        const ORDER_ACQ_REL = extra::CL_DEVICE_ATOMIC_ORDER_ACQ_REL;
        /// `CL_DEVICE_ATOMIC_ORDER_SEQ_CST`.
        const ORDER_SEQ_CST = extra::CL_DEVICE_ATOMIC_ORDER_SEQ_CST;
        /// `CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM`.
        const SCOPE_WORK_ITEM = extra::CL_DEVICE_ATOMIC_SCOPE_WORK_ITEM;
        /// `CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP`.
        const SCOPE_WORK_GROUP = extra::CL_DEVICE_ATOMIC_SCOPE_WORK_GROUP;
        /// `CL_DEVICE_ATOMIC_SCOPE_DEVICE`.
        const SCOPE_DEVICE = extra::CL_DEVICE_ATOMIC_SCOPE_DEVICE;
        /// `CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES`.
        const SCOPE_ALL_DEVICES = extra::CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES;
    }
}

/// `CL_DEVICE_LOCAL_MEM_TYPE`: whether `__local` memory is dedicated on-chip memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalMemType {
    /// `CL_NONE` (custom devices only).
    None,
    /// `CL_LOCAL`: dedicated local memory (GPUs).
    Local,
    /// `CL_GLOBAL`: emulated in global memory (most CPU runtimes).
    Global,
}

/// Image limits of a device (all zero when [`Device::image_support`] is false).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageLimits {
    /// `CL_DEVICE_IMAGE2D_MAX_WIDTH`, `CL_DEVICE_IMAGE2D_MAX_HEIGHT`.
    pub max_2d: [usize; 2],
    /// `CL_DEVICE_IMAGE3D_MAX_WIDTH`, `..._HEIGHT`, `..._DEPTH`.
    pub max_3d: [usize; 3],
    /// `CL_DEVICE_IMAGE_MAX_BUFFER_SIZE` (1.2), in pixels.
    pub max_buffer_size: usize,
    /// `CL_DEVICE_IMAGE_MAX_ARRAY_SIZE` (1.2).
    pub max_array_size: usize,
    /// `CL_DEVICE_MAX_READ_IMAGE_ARGS`.
    pub max_read_image_args: u32,
    /// `CL_DEVICE_MAX_WRITE_IMAGE_ARGS`.
    pub max_write_image_args: u32,
    /// `CL_DEVICE_MAX_SAMPLERS`.
    pub max_samplers: u32,
    /// `CL_DEVICE_IMAGE_PITCH_ALIGNMENT` (2.0; 0 on older devices), in pixels.
    pub pitch_alignment: u32,
    /// `CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT` (2.0; 0 on older devices), in pixels.
    pub base_address_alignment: u32,
}

/// Vendor attributes, each read only when the device lists the extension that defines it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VendorAttributes {
    /// `CL_DEVICE_COMPUTE_CAPABILITY_MAJOR/MINOR_NV` (`cl_nv_device_attribute_query`).
    pub nv_compute_capability: Option<(u32, u32)>,
    /// `CL_DEVICE_WARP_SIZE_NV` (`cl_nv_device_attribute_query`).
    pub nv_warp_size: Option<u32>,
    /// `CL_DEVICE_WAVEFRONT_WIDTH_AMD` (`cl_amd_device_attribute_query`).
    pub amd_wavefront_width: Option<u32>,
    /// `CL_DEVICE_SIMD_WIDTH_AMD` (`cl_amd_device_attribute_query`).
    pub amd_simd_width: Option<u32>,
    /// `CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD` (`cl_amd_device_attribute_query`).
    pub amd_simd_per_compute_unit: Option<u32>,
    /// `CL_DEVICE_LOCAL_MEM_BANKS_AMD` (`cl_amd_device_attribute_query`).
    pub amd_local_mem_banks: Option<u32>,
    /// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`).
    pub intel_sub_group_sizes: Option<Vec<usize>>,
}

/// One OpenCL device of a platform.
///
/// Root devices from `clGetDeviceIDs` have no reference count (retain/release are no-ops for
/// them), so `Device` is `Copy`; sub-devices ([`Device::create_sub_devices`]) are interned for the
/// process's life so that they can be `Copy` too (see [`crate::Partition`]). The device and
/// platform versions and the base-address alignment are read once, at construction, because
/// every version-gated call and every sub-buffer command consults them.
#[derive(Clone, Copy)]
pub struct Device {
    id: sys::cl_device_id,
    platform: Platform,
    version: Version,
    platform_version: Version,
    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN` in bytes (at least 1).
    base_align: usize,
}

// SAFETY: a root device id is an immutable, process-lifetime handle and every OpenCL API call
// taking it is thread-safe (OpenCL 3.0 spec, "Multiple Host Threads": all API calls are
// thread-safe except clSetKernelArg & co on the same kernel). The cached versions are plain data.
unsafe impl Send for Device {}
// SAFETY: as for `Send`.
unsafe impl Sync for Device {}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        self.id == other.id
    }
}
impl Eq for Device {}
impl std::hash::Hash for Device {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl Device {
    /// Wraps a raw root-device id, reading its platform and both versions.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`/`clGetPlatformInfo`, [`Error::Version`] for a
    /// malformed version string.
    ///
    /// # Safety
    ///
    /// 1. `id` is a valid device id (from `clGetDeviceIDs`, `CL_CONTEXT_DEVICES`,
    ///    `CL_QUEUE_DEVICE`, ...) that stays valid for the process's life: a root device, or a
    ///    sub-device whose reference is never released (as [`Device::create_sub_devices`] keeps
    ///    them).
    pub unsafe fn from_raw(id: sys::cl_device_id) -> Result<Device> {
        // SAFETY: obligation 1; CL_DEVICE_PLATFORM and CL_DEVICE_VERSION are 1.0 parameters.
        let platform_id: sys::cl_platform_id =
            unsafe { raw::get_info(id, sys::CL_DEVICE_PLATFORM) }
                .map_err(Error::cl("clGetDeviceInfo"))?;
        // SAFETY: the id was just returned by the driver for this device.
        let platform = unsafe { Platform::from_raw(platform_id) };
        // SAFETY: as above.
        let version: String = unsafe { raw::get_info(id, sys::CL_DEVICE_VERSION) }
            .map_err(Error::cl("clGetDeviceInfo"))?;
        // SAFETY: as above; a 1.0 parameter.
        let align_bits: sys::cl_uint =
            unsafe { raw::get_info(id, sys::CL_DEVICE_MEM_BASE_ADDR_ALIGN) }
                .map_err(Error::cl("clGetDeviceInfo"))?;
        Ok(Device {
            id,
            platform,
            version: Version::parse_platform(&version)?,
            platform_version: platform.version()?,
            base_align: (align_bits / 8).max(1) as usize,
        })
    }

    /// The raw id.
    pub fn as_raw(&self) -> sys::cl_device_id {
        self.id
    }

    /// The platform this device belongs to.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The device's OpenCL version (`CL_DEVICE_VERSION`, parsed at construction).
    pub fn version(&self) -> Version {
        self.version
    }

    /// The platform's OpenCL version (parsed at construction). Entry points are gated on this.
    pub fn platform_version(&self) -> Version {
        self.platform_version
    }

    /// [`Error::Unsupported`] unless both the device and its platform are at least `needed`.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] naming `feature` and the older of the two versions.
    pub fn require_version(&self, needed: Version, feature: &'static str) -> Result<()> {
        if self.platform_version < needed {
            Err(Error::needs_version(
                feature,
                needed,
                "platform",
                self.platform_version,
            ))
        } else if self.version < needed {
            Err(Error::needs_version(
                feature,
                needed,
                "device",
                self.version,
            ))
        } else {
            Ok(())
        }
    }

    /// Any device parameter, decoded as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    ///
    /// # Safety
    ///
    /// 1. `param` exists on this device's version, and vendor parameters are asked only of devices
    ///    listing their extension.
    pub unsafe fn info<T: InfoValue>(&self, param: sys::cl_device_info) -> Result<T> {
        // SAFETY: `self.id` is valid (type invariant); obligation 1 covers `param`.
        unsafe { raw::get_info(self.id, param) }.map_err(Error::cl("clGetDeviceInfo"))
    }

    /// A 1.0/1.1/1.2 parameter every device answers.
    fn core<T: InfoValue>(&self, param: sys::cl_device_info) -> Result<T> {
        // SAFETY: callers pass only parameters of OpenCL 1.2 or older, asked of 1.2+ platforms
        // (the oldest this crate supports), or gate them first.
        unsafe { self.info(param) }
    }

    /// Whether the device supports device-side enqueue (on-device queues): every 2.x device;
    /// on 3.0 devices `CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES` says (optional there); none before
    /// 2.0. The 3.0 answer is read as bytes: PoCL 3.1 reports a 4-byte size for this 8-byte
    /// bitfield (docs/DEVICES.md).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn device_enqueue_support(&self) -> Result<bool> {
        if self.version < Version::V2_0 {
            return Ok(false);
        }
        if self.version < Version::V3_0 {
            return Ok(true);
        }
        // SAFETY: a 3.0 parameter asked of a 3.0+ device (checked above), read as raw bytes.
        let caps: Vec<u8> = unsafe { self.info(extra::CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES) }?;
        Ok(caps.iter().any(|&b| b != 0))
    }

    /// `CL_DEVICE_NAME`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn name(&self) -> Result<String> {
        self.core(sys::CL_DEVICE_NAME)
    }

    /// `CL_DEVICE_VENDOR`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn vendor(&self) -> Result<String> {
        self.core(sys::CL_DEVICE_VENDOR)
    }

    /// `CL_DEVICE_VENDOR_ID`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn vendor_id(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_VENDOR_ID)
    }

    /// `CL_DEVICE_VERSION`, the full string.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn version_string(&self) -> Result<String> {
        self.core(sys::CL_DEVICE_VERSION)
    }

    /// `CL_DRIVER_VERSION` (free-form, vendor-defined).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn driver_version(&self) -> Result<String> {
        self.core(sys::CL_DRIVER_VERSION)
    }

    /// `CL_DEVICE_OPENCL_C_VERSION`, parsed: the highest OpenCL C version the compiler accepts
    /// without `-cl-std` (on 3.0 devices see also [`Device::opencl_c_all_versions`]).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`, [`Error::Version`] for a malformed string.
    pub fn opencl_c_version(&self) -> Result<Version> {
        let s: String = self.core(sys::CL_DEVICE_OPENCL_C_VERSION)?;
        Ok(Version::parse_opencl_c(&s)?)
    }

    /// Every OpenCL C version the device supports: `CL_DEVICE_OPENCL_C_ALL_VERSIONS` on 3.0
    /// devices, otherwise the single [`Device::opencl_c_version`].
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`, [`Error::Version`] for a malformed string.
    pub fn opencl_c_all_versions(&self) -> Result<Vec<Version>> {
        if self.version >= Version::V3_0 {
            // SAFETY: a 3.0 parameter asked of a 3.0 device.
            let all: Vec<extra::cl_name_version> =
                unsafe { self.info(extra::CL_DEVICE_OPENCL_C_ALL_VERSIONS) }?;
            Ok(all
                .iter()
                .map(|nv| Version::from_cl_version(nv.version))
                .collect())
        } else {
            Ok(vec![self.opencl_c_version()?])
        }
    }

    /// `CL_DEVICE_NUMERIC_VERSION` on 3.0 devices, `None` before.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn numeric_version(&self) -> Result<Option<Version>> {
        if self.version < Version::V3_0 {
            return Ok(None);
        }
        // SAFETY: a 3.0 parameter asked of a 3.0 device.
        let v: sys::cl_uint = unsafe { self.info(extra::CL_DEVICE_NUMERIC_VERSION) }?;
        Ok(Some(Version::from_cl_version(v)))
    }

    /// `CL_DEVICE_PROFILE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn profile(&self) -> Result<String> {
        self.core(sys::CL_DEVICE_PROFILE)
    }

    /// `CL_DEVICE_TYPE`. Unknown bits are kept.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn device_type(&self) -> Result<DeviceType> {
        Ok(DeviceType::from_bits_retain(
            self.core(sys::CL_DEVICE_TYPE)?,
        ))
    }

    /// `CL_DEVICE_EXTENSIONS`, split on whitespace.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn extensions(&self) -> Result<Vec<String>> {
        let s: String = self.core(sys::CL_DEVICE_EXTENSIONS)?;
        Ok(s.split_whitespace().map(str::to_owned).collect())
    }

    /// Whether `CL_DEVICE_EXTENSIONS` lists `name` (exact match, not a substring).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn has_extension(&self, name: &str) -> Result<bool> {
        let s: String = self.core(sys::CL_DEVICE_EXTENSIONS)?;
        Ok(s.split_whitespace().any(|e| e == name))
    }

    /// `CL_DEVICE_AVAILABLE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn available(&self) -> Result<bool> {
        self.core(sys::CL_DEVICE_AVAILABLE)
    }

    /// `CL_DEVICE_COMPILER_AVAILABLE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn compiler_available(&self) -> Result<bool> {
        self.core(sys::CL_DEVICE_COMPILER_AVAILABLE)
    }

    /// `CL_DEVICE_MAX_COMPUTE_UNITS`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_compute_units(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_MAX_COMPUTE_UNITS)
    }

    /// `CL_DEVICE_ADDRESS_BITS` (32 or 64): the size of `size_t` and pointers in kernels.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn address_bits(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_ADDRESS_BITS)
    }

    /// `CL_DEVICE_ENDIAN_LITTLE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn endian_little(&self) -> Result<bool> {
        self.core(sys::CL_DEVICE_ENDIAN_LITTLE)
    }

    /// `CL_DEVICE_HOST_UNIFIED_MEMORY` (1.1; deprecated by 2.0 but still answered).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn host_unified_memory(&self) -> Result<bool> {
        self.core(sys::CL_DEVICE_HOST_UNIFIED_MEMORY)
    }

    /// `CL_DEVICE_GLOBAL_MEM_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn global_mem_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_GLOBAL_MEM_SIZE)
    }

    /// `CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn global_mem_cacheline_size(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE)
    }

    /// `CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn global_mem_cache_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_GLOBAL_MEM_CACHE_SIZE)
    }

    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, in bytes: the largest single buffer.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_mem_alloc_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_MAX_MEM_ALLOC_SIZE)
    }

    /// `CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_constant_buffer_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)
    }

    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN`, in **bits** (as the spec defines it).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn mem_base_addr_align_bits(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_MEM_BASE_ADDR_ALIGN)
    }

    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN` / 8: the alignment, in bytes, a sub-buffer origin needs.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn mem_base_addr_align_bytes(&self) -> Result<usize> {
        Ok(self.base_align)
    }

    /// As [`Device::mem_base_addr_align_bytes`], infallible: read once, when the `Device` was
    /// made (every command on a sub-buffer checks it against its queue's device).
    pub fn base_addr_align(&self) -> usize {
        self.base_align
    }

    /// `CL_DEVICE_LOCAL_MEM_TYPE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`; [`Error::InvalidArgument`] for a value outside the
    /// spec's three.
    pub fn local_mem_type(&self) -> Result<LocalMemType> {
        let t: sys::cl_device_local_mem_type = self.core(sys::CL_DEVICE_LOCAL_MEM_TYPE)?;
        match t {
            sys::CL_NONE => Ok(LocalMemType::None),
            sys::CL_LOCAL => Ok(LocalMemType::Local),
            sys::CL_GLOBAL => Ok(LocalMemType::Global),
            other => Err(Error::InvalidArgument(format!(
                "driver reported local memory type {other:#x}"
            ))),
        }
    }

    /// `CL_DEVICE_LOCAL_MEM_SIZE`, in bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn local_mem_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_LOCAL_MEM_SIZE)
    }

    /// `CL_DEVICE_MAX_WORK_GROUP_SIZE`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_work_group_size(&self) -> Result<usize> {
        self.core(sys::CL_DEVICE_MAX_WORK_GROUP_SIZE)
    }

    /// `CL_DEVICE_MAX_WORK_ITEM_SIZES`, one entry per dimension.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_work_item_sizes(&self) -> Result<Vec<usize>> {
        self.core(sys::CL_DEVICE_MAX_WORK_ITEM_SIZES)
    }

    /// `CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` on 3.0 devices, `None` before (use the
    /// kernel's `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` there).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn preferred_work_group_size_multiple(&self) -> Result<Option<usize>> {
        if self.version < Version::V3_0 {
            return Ok(None);
        }
        // SAFETY: a 3.0 parameter asked of a 3.0 device.
        unsafe { self.info(extra::CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE) }.map(Some)
    }

    /// `CL_DEVICE_PROFILING_TIMER_RESOLUTION`, in nanoseconds.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn profiling_timer_resolution(&self) -> Result<usize> {
        self.core(sys::CL_DEVICE_PROFILING_TIMER_RESOLUTION)
    }

    /// `CL_DEVICE_QUEUE_PROPERTIES` (`CL_DEVICE_QUEUE_ON_HOST_PROPERTIES` in 2.0+): what host
    /// queues support.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn queue_properties(&self) -> Result<QueueProperties> {
        Ok(QueueProperties::from_bits_retain(
            self.core(sys::CL_DEVICE_QUEUE_PROPERTIES)?,
        ))
    }

    /// `CL_DEVICE_IMAGE_SUPPORT`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn image_support(&self) -> Result<bool> {
        self.core(sys::CL_DEVICE_IMAGE_SUPPORT)
    }

    /// The image limits; the 2.0 alignments are 0 on older devices.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn image_limits(&self) -> Result<ImageLimits> {
        let (pitch_alignment, base_address_alignment) = if self.version >= Version::V2_0 {
            (
                self.core(sys::CL_DEVICE_IMAGE_PITCH_ALIGNMENT)?,
                self.core(sys::CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT)?,
            )
        } else {
            (0, 0)
        };
        Ok(ImageLimits {
            max_2d: [
                self.core(sys::CL_DEVICE_IMAGE2D_MAX_WIDTH)?,
                self.core(sys::CL_DEVICE_IMAGE2D_MAX_HEIGHT)?,
            ],
            max_3d: [
                self.core(sys::CL_DEVICE_IMAGE3D_MAX_WIDTH)?,
                self.core(sys::CL_DEVICE_IMAGE3D_MAX_HEIGHT)?,
                self.core(sys::CL_DEVICE_IMAGE3D_MAX_DEPTH)?,
            ],
            max_buffer_size: self.core(sys::CL_DEVICE_IMAGE_MAX_BUFFER_SIZE)?,
            max_array_size: self.core(sys::CL_DEVICE_IMAGE_MAX_ARRAY_SIZE)?,
            max_read_image_args: self.core(sys::CL_DEVICE_MAX_READ_IMAGE_ARGS)?,
            max_write_image_args: self.core(sys::CL_DEVICE_MAX_WRITE_IMAGE_ARGS)?,
            max_samplers: self.core(sys::CL_DEVICE_MAX_SAMPLERS)?,
            pitch_alignment,
            base_address_alignment,
        })
    }

    /// Whether the device supports pipes: `CL_DEVICE_PIPE_SUPPORT` on 3.0 devices (optional
    /// there), `true` on 2.x (mandatory), `false` before 2.0.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn pipe_support(&self) -> Result<bool> {
        if self.version >= Version::V3_0 {
            // SAFETY: a 3.0 parameter asked of a 3.0 device.
            unsafe { self.info(extra::CL_DEVICE_PIPE_SUPPORT) }
        } else {
            Ok(self.version >= Version::V2_0)
        }
    }

    /// `CL_DEVICE_SVM_CAPABILITIES` on 2.0+ devices (possibly empty on 3.0), empty before 2.0
    /// (the query is not made there).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn svm_capabilities(&self) -> Result<SvmCapabilities> {
        if self.version < Version::V2_0 || self.platform_version < Version::V2_0 {
            return Ok(SvmCapabilities::empty());
        }
        // SAFETY: a 2.0 parameter asked of a 2.0+ device.
        let bits: sys::cl_device_svm_capabilities =
            unsafe { self.info(sys::CL_DEVICE_SVM_CAPABILITIES) }?;
        Ok(SvmCapabilities::from_bits_retain(bits))
    }

    /// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` on 3.0 devices, `None` before.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn atomic_memory_capabilities(&self) -> Result<Option<AtomicCapabilities>> {
        self.atomic_caps(extra::CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES)
    }

    /// `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES` on 3.0 devices, `None` before.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn atomic_fence_capabilities(&self) -> Result<Option<AtomicCapabilities>> {
        self.atomic_caps(extra::CL_DEVICE_ATOMIC_FENCE_CAPABILITIES)
    }

    fn atomic_caps(&self, param: sys::cl_device_info) -> Result<Option<AtomicCapabilities>> {
        if self.version < Version::V3_0 {
            return Ok(None);
        }
        // SAFETY: a 3.0 parameter asked of a 3.0 device.
        let bits: extra::cl_device_atomic_capabilities = unsafe { self.info(param) }?;
        Ok(Some(AtomicCapabilities::from_bits_retain(bits)))
    }

    /// Vendor attributes; each is queried only when the device lists its extension
    /// (`cl_nv_device_attribute_query`, `cl_amd_device_attribute_query`,
    /// `cl_intel_required_subgroup_size`), otherwise `None`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn vendor_attributes(&self) -> Result<VendorAttributes> {
        let exts: String = self.core(sys::CL_DEVICE_EXTENSIONS)?;
        let has = |name: &str| exts.split_whitespace().any(|e| e == name);
        let mut v = VendorAttributes::default();
        if has("cl_nv_device_attribute_query") {
            // SAFETY: the device lists cl_nv_device_attribute_query.
            let major = unsafe { self.info(extra::CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV) }?;
            // SAFETY: as above.
            let minor = unsafe { self.info(extra::CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV) }?;
            v.nv_compute_capability = Some((major, minor));
            // SAFETY: as above.
            v.nv_warp_size = Some(unsafe { self.info(extra::CL_DEVICE_WARP_SIZE_NV) }?);
        }
        if has("cl_amd_device_attribute_query") {
            // SAFETY: the device lists cl_amd_device_attribute_query.
            v.amd_wavefront_width =
                Some(unsafe { self.info(extra::CL_DEVICE_WAVEFRONT_WIDTH_AMD) }?);
            // SAFETY: as above.
            v.amd_simd_width = Some(unsafe { self.info(extra::CL_DEVICE_SIMD_WIDTH_AMD) }?);
            // SAFETY: as above.
            v.amd_simd_per_compute_unit =
                Some(unsafe { self.info(extra::CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD) }?);
            // SAFETY: as above.
            v.amd_local_mem_banks =
                Some(unsafe { self.info(extra::CL_DEVICE_LOCAL_MEM_BANKS_AMD) }?);
        }
        if has("cl_intel_required_subgroup_size") {
            // SAFETY: the device lists cl_intel_required_subgroup_size.
            v.intel_sub_group_sizes =
                Some(unsafe { self.info(extra::CL_DEVICE_SUB_GROUP_SIZES_INTEL) }?);
        }
        Ok(v)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.id)
            .field("name", &self.name().unwrap_or_default())
            .field("version", &self.version)
            .field("platform_version", &self.platform_version)
            .finish()
    }
}

bitflags! {
    /// `cl_command_queue_properties` for host queues.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QueueProperties: sys::cl_command_queue_properties {
        /// `CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`: commands may run in any order their wait
        /// lists allow.
        const OUT_OF_ORDER_EXEC_MODE_ENABLE = sys::CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
        /// `CL_QUEUE_PROFILING_ENABLE`: events carry profiling timestamps.
        const PROFILING_ENABLE = sys::CL_QUEUE_PROFILING_ENABLE;
        /// `CL_QUEUE_ON_DEVICE` (2.0; device-side queues are not wrapped by `Queue`).
        const ON_DEVICE = sys::CL_QUEUE_ON_DEVICE;
        /// `CL_QUEUE_ON_DEVICE_DEFAULT` (2.0).
        const ON_DEVICE_DEFAULT = sys::CL_QUEUE_ON_DEVICE_DEFAULT;
    }
}
