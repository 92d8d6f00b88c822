//! [`Context`]: the scope of memory objects, programs and queues.

use std::ffi::c_void;
use std::sync::Arc;

use crate::raw_handle::{
    adopt_or_release, clone_retains, debug_fields, drop_releases, eq_by_handle, get_info,
};
use cl_raw::object::Object;
use cl_raw::{context as raw, sys, Version};

use crate::error::{Error, Result};
use crate::runtime::device::Device;
use crate::runtime::platform::Platform;

/// An OpenCL context over one or more devices of one platform.
///
/// Owns one reference: `Clone` retains, `Drop` releases (failures are logged, never panic). The
/// device list is read once at construction.
pub struct Context {
    raw: sys::cl_context,
    devices: Arc<[Device]>,
    /// Pinned chunks for staged transfers, shared by the clones of this wrapper.
    staging: Arc<crate::runtime::staging::StagingCache>,
    /// Counts this wrapper in [`crate::live_objects`].
    _live: crate::runtime::live::Live<{ crate::runtime::live::CONTEXT }>,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"; the
// only exceptions act on kernels), so a context may be used and released from any thread.
unsafe impl Send for Context {}
// SAFETY: as for `Send`; `&Context` only reaches thread-safe calls.
unsafe impl Sync for Context {}

impl Context {
    /// A context over `devices`, which must be non-empty and of one platform (PyOpenCL's
    /// `cl.Context([dev])`; one device: `Context::new(&[dev])`). A device listed twice counts
    /// once, as the driver takes it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list or devices of several platforms,
    /// [`Error::Unsupported`] for a platform older than OpenCL 1.2 (checked before calling);
    /// [`Error::Cl`] from `clCreateContext`.
    pub fn new(devices: &[Device]) -> Result<Context> {
        let first = devices
            .first()
            .ok_or_else(|| Error::InvalidArgument("a context needs at least one device".into()))?;
        let platform = first.platform();
        if devices.iter().any(|d| d.platform() != platform) {
            return Err(Error::InvalidArgument(
                "the devices of a context must share one platform".into(),
            ));
        }
        supported_platform(first.platform_version())?;
        // The driver ignores a device listed twice; so does the context's own list.
        let mut unique: Vec<Device> = Vec::with_capacity(devices.len());
        for d in devices {
            if !unique.contains(d) {
                unique.push(*d);
            }
        }
        let ids: Vec<sys::cl_device_id> = unique.iter().map(Device::as_raw).collect();
        let props = [
            sys::CL_CONTEXT_PLATFORM as sys::cl_context_properties,
            platform.as_raw() as isize,
            0,
        ];
        // SAFETY: valid devices of one platform, a 0-terminated property list, no callback; we
        // own the returned reference.
        let raw = unsafe { raw::create(&props, &ids, None, std::ptr::null_mut()) }
            .map_err(Error::cl("clCreateContext"))?;
        Ok(Context {
            _live: crate::runtime::live::Live::new(),
            raw,
            devices: unique.into(),
            staging: Arc::default(),
        })
    }

    /// [`Error::Unsupported`] unless every device of the context reports
    /// `CL_DEVICE_IMAGE_SUPPORT`: an image or sampler of a multi-device context is usable on
    /// every device's queue, so all of them must take images (the spec lets a context create
    /// them when one device can). Also on PoCL for a context of sub-devices, where it aborts.
    ///
    /// # Errors
    ///
    /// As above; [`Error::Cl`] from `clGetDeviceInfo`.
    pub(crate) fn require_image_support(&self, feature: &'static str) -> Result<()> {
        if self
            .devices()
            .iter()
            .any(|d| d.parent_device().is_ok_and(|p| p.is_some()))
            && crate::runtime::quirks::quirks(&self.platform()).subdevice_images_abort
        {
            // PoCL aborts the process (an assertion in clEnqueueWriteImage) for an image of a
            // context over sub-devices: repro/pocl_subdevice_image_write_abort.c,
            // docs/DEVICES.md#pocl-subdevice-images.
            return Err(Error::Unsupported {
                feature,
                needs: "a driver other than PoCL for images in a context of sub-devices (PoCL \
                        3.1 aborts in clEnqueueWriteImage there)"
                    .into(),
            });
        }
        for d in self.devices() {
            if !d.image_support()? {
                return Err(Error::Unsupported {
                    feature,
                    needs: format!(
                        "CL_DEVICE_IMAGE_SUPPORT on every device of the context; device '{}' \
                         lacks it",
                        d.name().unwrap_or_default().trim()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Rejects an allocation of `size` bytes larger than `CL_DEVICE_MAX_MEM_ALLOC_SIZE` of every
    /// device of the context (the driver's `CL_INVALID_BUFFER_SIZE`; `clSVMAlloc` returns NULL),
    /// naming it `what` in the message.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] as above; [`Error::Cl`] from `clGetDeviceInfo`.
    pub(crate) fn check_alloc_size(&self, what: &str, size: usize) -> Result<()> {
        let mut max = 0u64;
        for d in self.devices() {
            max = max.max(d.max_mem_alloc_size()?);
        }
        if size as u64 > max {
            return Err(Error::InvalidArgument(format!(
                "{what} size {size} exceeds CL_DEVICE_MAX_MEM_ALLOC_SIZE ({max}) of every device"
            )));
        }
        Ok(())
    }

    /// The pinned chunks of staged transfers (see `crate::buffer::staged`).
    pub(crate) fn staging(&self) -> &crate::runtime::staging::StagingCache {
        &self.staging
    }

    /// The staging cache itself, for work that gives chunks back after this call returned.
    pub(crate) fn staging_shared(&self) -> Arc<crate::runtime::staging::StagingCache> {
        Arc::clone(&self.staging)
    }

    /// The context's devices, in creation order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The platform of the context's devices.
    pub(crate) fn platform(&self) -> Platform {
        self.devices[0].platform()
    }

    /// The platform's version; entry points are gated on it.
    pub(crate) fn platform_version(&self) -> Version {
        self.devices[0].platform_version()
    }

    /// [`Error::Unsupported`] unless the platform is at least `needed` (for entry points).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] naming `feature`.
    pub(crate) fn require_platform_version(
        &self,
        needed: Version,
        feature: &'static str,
    ) -> Result<()> {
        let have = self.platform_version();
        if have >= needed {
            Ok(())
        } else {
            Err(Error::needs_version(feature, needed, "platform", have))
        }
    }

    /// Runs `callback` once the context is destroyed (its last reference released, including
    /// those held by queues, programs and memory objects), on whichever thread releases it or a
    /// driver thread (`clSetContextDestructorCallback`, OpenCL 3.0).
    ///
    /// Unlike [`crate::Event::on`], the closure runs right there, inside the driver's release,
    /// so that what it does is done before the driver can hand the context's handle out again
    /// (`cl_pool::ContextCache` evicts by handle). It must therefore not block, nor drop an object
    /// whose drop may ([`crate::PinnedMemory`] and whatever owns one): move those to a thread of
    /// your own. A panic inside the callback is caught and logged.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] on platforms older than 3.0 (checked first: Oclgrind 21.10, an
    /// OpenCL 1.2 platform, hangs on 3.0 entry points); [`Error::Cl`] from
    /// `clSetContextDestructorCallback` (the closure is dropped then).
    pub fn on_destroy(&self, callback: impl FnOnce() + Send + 'static) -> Result<()> {
        self.require_platform_version(Version::V3_0, "clSetContextDestructorCallback")?;
        let boxed: Box<DestroyCallback> = Box::new(Box::new(callback));
        let user_data = Box::into_raw(boxed).cast::<c_void>();
        // SAFETY: a valid context of a 3.0 platform (checked above); `user_data` stays valid until
        // `destroy_trampoline` reclaims it, which the driver calls exactly once; the trampoline
        // never unwinds.
        match unsafe { raw::set_destructor_callback(self.raw, destroy_trampoline, user_data) } {
            Ok(()) => Ok(()),
            Err(e) => {
                // SAFETY: registration failed, so the driver never calls the trampoline: the box
                // is still ours.
                drop(unsafe { Box::from_raw(user_data.cast::<DestroyCallback>()) });
                Err(Error::cl("clSetContextDestructorCallback")(e))
            }
        }
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` retains one more for the caller and drops the wrapper
// (`retain_then_drop`; if the retain fails, it forgets the wrapper instead).
unsafe impl crate::raw_handle::RawHandle for Context {
    crate::raw_handle::raw_handle_field!(Context: sys::cl_context);

    /// Adopts one reference to a raw context (no retain).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] when its devices cannot be queried, [`Error::InvalidArgument`] when it reports
    /// none; the reference is then released.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid context and the caller gives its reference to the new `Context`.
    unsafe fn from_raw(raw: sys::cl_context) -> Result<Context> {
        let read = || -> Result<Context> {
            // SAFETY: obligation 1.
            let ids: Vec<sys::cl_device_id> =
                unsafe { get_info(Object::Context, raw, sys::CL_CONTEXT_DEVICES) }?;
            let devices = ids
                .into_iter()
                // SAFETY: ids of the context's (root) devices.
                .map(|id| unsafe { Device::from_raw(id) })
                .collect::<Result<Vec<Device>>>()?;
            if devices.is_empty() {
                return Err(Error::InvalidArgument(
                    "the context reports no devices".into(),
                ));
            }
            supported_platform(devices[0].platform_version())?;
            Ok(Context {
                _live: crate::runtime::live::Live::new(),
                raw,
                devices: devices.into(),
                staging: Arc::default(),
            })
        };
        // SAFETY: obligation 1.
        unsafe { adopt_or_release(Object::Context, raw, read) }
    }

    /// Gives the caller a reference of its own (one retain), then drops the wrapper.
    fn into_raw(self) -> sys::cl_context {
        // `Drop` frees the staging cache too.
        crate::raw_handle::retain_then_drop(self)
    }
}

/// Every context of this crate, and so every object made in one, is of an OpenCL 1.2+ platform:
/// the crate calls 1.2 entry points (markers and barriers with wait lists, kernel argument and
/// memory queries) without asking each time.
fn supported_platform(version: Version) -> Result<()> {
    if version < Version::V1_2 {
        return Err(Error::needs_version(
            "cl-mem contexts",
            Version::V1_2,
            "platform",
            version,
        ));
    }
    Ok(())
}

clone_retains!(Context: Context { devices, staging, _live });
drop_releases!(Context: Context);
eq_by_handle!(raw: Context);
debug_fields!(Context: raw, devices);

type DestroyCallback = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn destroy_trampoline(_context: sys::cl_context, user_data: *mut c_void) {
    // SAFETY: `user_data` is the `Box<DestroyCallback>` leaked by `Context::on_destroy`; the
    // driver calls each registered destructor callback exactly once.
    let callback = unsafe { Box::from_raw(user_data.cast::<DestroyCallback>()) };
    crate::error::run_contained("context destructor callback", callback);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_need_a_1_2_platform() {
        assert!(supported_platform(Version::V1_2).is_ok());
        assert!(supported_platform(Version::V3_0).is_ok());
        assert!(matches!(
            supported_platform(Version::V1_1),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            supported_platform(Version::V1_0),
            Err(Error::Unsupported { .. })
        ));
    }
}
