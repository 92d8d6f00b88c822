//! [`Platform`]: an OpenCL implementation registered with the ICD loader.

use std::fmt;

use cl_raw::{platform as raw, sys, ClError, InfoValue, Version};

use crate::error::{Error, Result};
use crate::runtime::device::{Device, DeviceType};

/// An OpenCL platform (PoCL, Oclgrind, the Intel CPU runtime, a GPU driver, ...).
///
/// A plain id: platforms have no reference count and live as long as the process, so `Platform`
/// is `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Platform {
    id: sys::cl_platform_id,
}

// SAFETY: a platform id is an immutable, process-lifetime handle; every OpenCL API call taking it
// is thread-safe (OpenCL 3.0 spec, appendix "Shared Objects" / "Multiple Host Threads": all API
// calls are thread-safe except clSetKernelArg, clSetKernelArgSVMPointer, clSetKernelExecInfo and
// clCloneKernel on the same kernel).
unsafe impl Send for Platform {}
// SAFETY: as for `Send`: only thread-safe calls are made through a shared `Platform`.
unsafe impl Sync for Platform {}

impl Platform {
    /// Every platform the ICD loader knows, in its order. No registered ICD gives an empty list
    /// (the loader's `CL_PLATFORM_NOT_FOUND_KHR` is not an error here).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] when `clGetPlatformIDs` fails otherwise.
    pub fn list() -> Result<Vec<Platform>> {
        match raw::get_ids() {
            Ok(ids) => Ok(ids.into_iter().map(|id| Platform { id }).collect()),
            Err(ClError::PlatformNotFoundKhr) => Ok(Vec::new()),
            Err(e) => Err(Error::cl("clGetPlatformIDs")(e)),
        }
    }

    /// Wraps a raw id.
    ///
    /// # Safety
    ///
    /// 1. `id` was returned by `clGetPlatformIDs` (or `CL_DEVICE_PLATFORM`).
    pub unsafe fn from_raw(id: sys::cl_platform_id) -> Platform {
        Platform { id }
    }

    /// The raw id.
    pub fn as_raw(&self) -> sys::cl_platform_id {
        self.id
    }

    /// Any platform parameter, decoded as `T`: PyOpenCL's `Platform.get_info`, for the
    /// parameters without a method of their own (`p.info::<String>(sys::CL_PLATFORM_PROFILE)`,
    /// `p.info::<String>(sys::CL_PLATFORM_EXTENSIONS)`, `sys` being `cl_raw::sys`).
    ///
    /// Safe because the parameter is checked first: a 2.1 or 3.0 parameter only on a platform of
    /// that version, `CL_PLATFORM_ICD_SUFFIX_KHR` only on one listing `cl_khr_icd`.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] for a parameter newer than the platform or whose extension it
    /// lacks; [`Error::InvalidArgument`] for a parameter this crate does not know (ask it through
    /// `unsafe` `cl_raw::platform::get_info`); [`Error::Cl`] from `clGetPlatformInfo`
    /// (`CL_INVALID_VALUE` when the value does not fit `T`).
    pub fn info<T: InfoValue>(&self, param: sys::cl_platform_info) -> Result<T> {
        match param {
            sys::CL_PLATFORM_PROFILE..=sys::CL_PLATFORM_EXTENSIONS => {}
            sys::CL_PLATFORM_HOST_TIMER_RESOLUTION => {
                self.require_version(Version::V2_1, "this clGetPlatformInfo parameter")?;
            }
            // CL_PLATFORM_NUMERIC_VERSION, CL_PLATFORM_EXTENSIONS_WITH_VERSION.
            0x0906 | 0x0907 => {
                self.require_version(Version::V3_0, "this clGetPlatformInfo parameter")?
            }
            // CL_PLATFORM_ICD_SUFFIX_KHR.
            0x0920 => {
                if !self.has_extension("cl_khr_icd")? {
                    return Err(Error::Unsupported {
                        feature: "CL_PLATFORM_ICD_SUFFIX_KHR",
                        needs: "cl_khr_icd, which the platform does not list".into(),
                    });
                }
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "clGetPlatformInfo parameter {param:#x} is not one cl-mem knows; ask it \
                     through cl_raw::platform::get_info"
                )))
            }
        }
        self.known(param)
    }

    /// A parameter known to exist on this platform.
    fn known<T: InfoValue>(&self, param: sys::cl_platform_info) -> Result<T> {
        // SAFETY: `self.id` is valid (type invariant); callers pass only parameters that exist
        // on this platform (1.0 ones, or checked as above).
        unsafe { raw::get_info(self.id, param) }.map_err(Error::cl("clGetPlatformInfo"))
    }

    /// `CL_PLATFORM_NAME`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn name(&self) -> Result<String> {
        self.known(sys::CL_PLATFORM_NAME)
    }

    /// `CL_PLATFORM_VENDOR`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn vendor(&self) -> Result<String> {
        self.known(sys::CL_PLATFORM_VENDOR)
    }

    /// The parsed platform version, used to gate entry points newer than 1.2 (the full string:
    /// `info::<String>(sys::CL_PLATFORM_VERSION)`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`, [`Error::Version`] for a malformed string.
    pub fn version(&self) -> Result<Version> {
        Ok(Version::parse_platform(
            &self.known::<String>(sys::CL_PLATFORM_VERSION)?,
        )?)
    }

    /// Whether `CL_PLATFORM_EXTENSIONS` lists `name` (exact match).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn has_extension(&self, name: &str) -> Result<bool> {
        Ok(self
            .known::<String>(sys::CL_PLATFORM_EXTENSIONS)?
            .split_whitespace()
            .any(|e| e == name))
    }

    /// The devices of the given type (`DeviceType::ALL` for every device, `DeviceType::GPU`,
    /// ...); none is an empty list. PyOpenCL's `get_devices(device_type)`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceIDs` or the version queries of each device.
    pub fn devices(&self, device_type: DeviceType) -> Result<Vec<Device>> {
        // SAFETY: `self.id` is a valid platform id (type invariant).
        let ids = unsafe { cl_raw::device::get_ids(self.id, device_type.bits()) }
            .map_err(Error::cl("clGetDeviceIDs"))?;
        ids.into_iter()
            // SAFETY: the ids were just returned by clGetDeviceIDs for this platform.
            .map(|id| unsafe { Device::from_raw(id) })
            .collect()
    }

    /// [`Error::Unsupported`] unless the platform is at least `needed`.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] naming `feature`; errors of [`Platform::version`].
    pub(crate) fn require_version(&self, needed: Version, feature: &'static str) -> Result<()> {
        let have = self.version()?;
        if have >= needed {
            Ok(())
        } else {
            Err(Error::needs_version(feature, needed, "platform", have))
        }
    }
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Platform")
            .field("id", &self.id)
            .field("name", &self.name().unwrap_or_default())
            .finish()
    }
}
