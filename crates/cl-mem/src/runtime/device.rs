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

crate::raw_handle::eq_by_handle!(hash id: Device);

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

    /// Any device parameter, decoded as `T`: PyOpenCL's `Device.get_info`, for the parameters
    /// without a method of their own (`dev.info::<u32>(sys::CL_DEVICE_ADDRESS_BITS)`,
    /// `dev.info::<String>(sys::CL_DEVICE_EXTENSIONS)`, `sys` being `cl_raw::sys`; 3.0 and
    /// vendor parameters are in `cl_raw::extra`).
    ///
    /// Safe because the parameter is checked first: a core parameter only on a device and
    /// platform of its version, an extension or vendor parameter (`CL_DEVICE_HALF_FP_CONFIG`,
    /// `CL_DEVICE_UUID_KHR`, `CL_DEVICE_WARP_SIZE_NV`, ...) only on a device listing its
    /// extension; some drivers misbehave when asked anything else. `T` must have the value's size
    /// (`cl_uint` → `u32`, `size_t` → `usize`, `cl_ulong`/bitfields → `u64`, `cl_bool` → `bool`,
    /// arrays → `Vec<_>`, strings → `String`).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] for a parameter newer than the device or platform, or whose
    /// extension the device lacks; [`Error::InvalidArgument`] for a parameter this crate does
    /// not know (ask it through `unsafe` `cl_raw::device::get_info`); [`Error::Cl`] from
    /// `clGetDeviceInfo` (`CL_INVALID_VALUE` when the value does not fit `T`).
    pub fn info<T: InfoValue>(&self, param: sys::cl_device_info) -> Result<T> {
        match param_needs(param) {
            Some(Needs::Version(needed)) => {
                self.require_version(needed, "this clGetDeviceInfo parameter")?
            }
            Some(Needs::Extension(ext)) => {
                if !self.has_extension(ext)? {
                    return Err(Error::Unsupported {
                        feature: "this clGetDeviceInfo parameter",
                        needs: format!(
                            "{ext}, which the device does not list (parameter {param:#x})"
                        ),
                    });
                }
            }
            None => {
                return Err(Error::InvalidArgument(format!(
                    "clGetDeviceInfo parameter {param:#x} is not one cl-mem knows; ask it through \
                     cl_raw::device::get_info"
                )))
            }
        }
        self.core(param)
    }

    /// A parameter already known to exist on this device: a 1.0/1.1/1.2 parameter (every
    /// platform this crate accepts is 1.2+), or one whose version or extension was checked.
    fn core<T: InfoValue>(&self, param: sys::cl_device_info) -> Result<T> {
        // SAFETY: `self.id` is valid (type invariant); callers pass only parameters that exist on
        // this device (see above).
        unsafe { raw::get_info(self.id, param) }.map_err(Error::cl("clGetDeviceInfo"))
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
        // A 3.0 parameter asked of a 3.0+ device (checked above), read as raw bytes.
        let caps: Vec<u8> = self.core(extra::CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES)?;
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

    /// Whether `CL_DEVICE_EXTENSIONS` lists `name` (exact match, not a substring).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn has_extension(&self, name: &str) -> Result<bool> {
        let s: String = self.core(sys::CL_DEVICE_EXTENSIONS)?;
        Ok(s.split_whitespace().any(|e| e == name))
    }

    /// `CL_DEVICE_MAX_COMPUTE_UNITS`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn max_compute_units(&self) -> Result<u32> {
        self.core(sys::CL_DEVICE_MAX_COMPUTE_UNITS)
    }

    /// `CL_DEVICE_HOST_UNIFIED_MEMORY` (1.1; deprecated by 2.0 but still answered).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub(crate) fn host_unified_memory(&self) -> Result<bool> {
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
    pub(crate) fn max_constant_buffer_size(&self) -> Result<u64> {
        self.core(sys::CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE)
    }

    /// `CL_DEVICE_MEM_BASE_ADDR_ALIGN` / 8: the alignment, in bytes, a sub-buffer origin needs
    /// (the spec gives it in bits; `info(sys::CL_DEVICE_MEM_BASE_ADDR_ALIGN)` reads those). Read
    /// once, when the `Device` was made: every command on a sub-buffer checks it against its
    /// queue's device.
    pub fn base_addr_align(&self) -> usize {
        self.base_align
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
    pub(crate) fn max_work_item_sizes(&self) -> Result<Vec<usize>> {
        self.core(sys::CL_DEVICE_MAX_WORK_ITEM_SIZES)
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
            // A 3.0 parameter asked of a 3.0 device.
            self.core(extra::CL_DEVICE_PIPE_SUPPORT)
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
        // A 2.0 parameter asked of a 2.0+ device.
        let bits: sys::cl_device_svm_capabilities = self.core(sys::CL_DEVICE_SVM_CAPABILITIES)?;
        Ok(SvmCapabilities::from_bits_retain(bits))
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

/// What a `clGetDeviceInfo` parameter needs to exist on a device.
enum Needs {
    /// A core parameter of this OpenCL version.
    Version(Version),
    /// A parameter defined by this extension.
    Extension(&'static str),
}

/// Where `param` comes from: the spec's core parameters by the version that added them (their
/// values were assigned in order), the extension parameters `cl_raw` names by their extension;
/// `None` for anything else.
fn param_needs(param: sys::cl_device_info) -> Option<Needs> {
    Some(match param {
        // Reserved in cl.h for the cl_khr_fp16 parameter.
        0x1033 => Needs::Extension("cl_khr_fp16"),
        // CL_DEVICE_OPENCL_C_NUMERIC_VERSION_KHR.
        0x105F => Needs::Extension("cl_khr_extended_versioning"),
        // CL_DEVICE_UUID_KHR, DRIVER_UUID_KHR, LUID_VALID_KHR, LUID_KHR, NODE_MASK_KHR.
        0x106A..=0x106E => Needs::Extension("cl_khr_device_uuid"),
        sys::CL_DEVICE_TYPE..=sys::CL_DEVICE_PRINTF_BUFFER_SIZE => Needs::Version(Version::V1_2),
        sys::CL_DEVICE_IMAGE_PITCH_ALIGNMENT..=sys::CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT => {
            Needs::Version(Version::V2_0)
        }
        0x105B..=sys::CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => {
            Needs::Version(Version::V2_1)
        }
        // CL_DEVICE_NUMERIC_VERSION .. CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED.
        extra::CL_DEVICE_NUMERIC_VERSION..=0x1072 => Needs::Version(Version::V3_0),
        // CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR, _EXPORT_HANDLE_TYPES_KHR.
        0x204D | 0x204E => Needs::Extension("cl_khr_external_semaphore"),
        // CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR.
        0x204F => Needs::Extension("cl_khr_external_memory"),
        extra::CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
        | extra::CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV
        | extra::CL_DEVICE_WARP_SIZE_NV => Needs::Extension("cl_nv_device_attribute_query"),
        extra::CL_DEVICE_SIMD_PER_COMPUTE_UNIT_AMD
        | extra::CL_DEVICE_SIMD_WIDTH_AMD
        | extra::CL_DEVICE_WAVEFRONT_WIDTH_AMD
        | extra::CL_DEVICE_LOCAL_MEM_BANKS_AMD => Needs::Extension("cl_amd_device_attribute_query"),
        extra::CL_DEVICE_SUB_GROUP_SIZES_INTEL => {
            Needs::Extension("cl_intel_required_subgroup_size")
        }
        _ => return None,
    })
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
    }
}
