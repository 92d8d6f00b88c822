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

    /// Any platform parameter, decoded as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    ///
    /// # Safety
    ///
    /// 1. `param` exists on this platform's version (3.0 parameters only on 3.0 platforms).
    pub unsafe fn info<T: InfoValue>(&self, param: sys::cl_platform_info) -> Result<T> {
        // SAFETY: `self.id` is valid (type invariant); obligation 1 covers `param`.
        unsafe { raw::get_info(self.id, param) }.map_err(Error::cl("clGetPlatformInfo"))
    }

    fn string(&self, param: sys::cl_platform_info) -> Result<String> {
        // SAFETY: called only with 1.0 string parameters.
        unsafe { self.info(param) }
    }

    /// `CL_PLATFORM_NAME`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn name(&self) -> Result<String> {
        self.string(sys::CL_PLATFORM_NAME)
    }

    /// `CL_PLATFORM_VENDOR`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn vendor(&self) -> Result<String> {
        self.string(sys::CL_PLATFORM_VENDOR)
    }

    /// `CL_PLATFORM_VERSION`, the full string (`"OpenCL 3.0 PoCL 3.1+debian ..."`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn version_string(&self) -> Result<String> {
        self.string(sys::CL_PLATFORM_VERSION)
    }

    /// The parsed platform version, used to gate entry points newer than 1.2.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`, [`Error::Version`] for a malformed string.
    pub fn version(&self) -> Result<Version> {
        Ok(Version::parse_platform(&self.version_string()?)?)
    }

    /// `CL_PLATFORM_PROFILE` (`"FULL_PROFILE"` or `"EMBEDDED_PROFILE"`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn profile(&self) -> Result<String> {
        self.string(sys::CL_PLATFORM_PROFILE)
    }

    /// `CL_PLATFORM_EXTENSIONS`, split on whitespace.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn extensions(&self) -> Result<Vec<String>> {
        Ok(self
            .string(sys::CL_PLATFORM_EXTENSIONS)?
            .split_whitespace()
            .map(str::to_owned)
            .collect())
    }

    /// Whether `CL_PLATFORM_EXTENSIONS` lists `name` (exact match).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetPlatformInfo`.
    pub fn has_extension(&self, name: &str) -> Result<bool> {
        Ok(self
            .string(sys::CL_PLATFORM_EXTENSIONS)?
            .split_whitespace()
            .any(|e| e == name))
    }

    /// Every device of the platform.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceIDs` or the version queries of each device.
    pub fn devices(&self) -> Result<Vec<Device>> {
        self.devices_of_type(DeviceType::ALL)
    }

    /// The devices of the given type (`DeviceType::GPU`, ...); none is an empty list.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceIDs` or the version queries of each device.
    pub fn devices_of_type(&self, device_type: DeviceType) -> Result<Vec<Device>> {
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
    pub fn require_version(&self, needed: Version, feature: &'static str) -> Result<()> {
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
