//! External memory and semaphores: `cl_khr_external_memory` (with `_opaque_fd`),
//! `cl_khr_semaphore` and `cl_khr_external_semaphore` (with `_opaque_fd`), and the
//! `cl_khr_device_uuid` queries that match an OpenCL device to another API's device.
//!
//! `cl-sys` 0.4 has none of these. The enqueue and semaphore entry points are extension functions:
//! the ICD loader does not export them, so they are looked up once per platform with
//! [`crate::platform::get_extension_function_address`] into a table ([`ExternalMemoryFns`],
//! [`SemaphoreFns`]) whose methods are the wrappers. Here are only the types of their signatures:
//! the constants (handle types, property keys, device queries) are read by `cl-mem` alone, behind
//! typed items (`MemoryHandleType`, `Device::uuid`, `Semaphore`), and live there
//! (`external/raw_ext.rs`); pass them to these wrappers as literals from the Khronos `CL/cl_ext.h`.
//!
//! Not fault-injection sites: the site list and its tidy check cover the core wrapper modules;
//! these calls are reached only on drivers that list the extensions.

#![expect(
    non_camel_case_types,
    reason = "the C names of OpenCL types are kept verbatim"
)]

use std::ffi::{c_void, CStr};

use crate::error::{check, created, ClError};
use crate::sys;

/// `cl_external_semaphore_handle_type_khr`.
pub type cl_external_semaphore_handle_type_khr = sys::cl_uint;
/// `cl_semaphore_khr`: an opaque semaphore handle.
pub type cl_semaphore_khr = *mut c_void;
/// `cl_semaphore_properties_khr` (a `cl_properties`).
pub type cl_semaphore_properties_khr = sys::cl_ulong;
/// `cl_semaphore_info_khr`.
pub type cl_semaphore_info_khr = sys::cl_uint;
/// `cl_semaphore_payload_khr`.
type cl_semaphore_payload_khr = sys::cl_ulong;

/// `clEnqueueAcquireExternalMemObjectsKHR_fn` and `clEnqueueReleaseExternalMemObjectsKHR_fn`
/// (one signature).
type EnqueueMemObjectsFn = unsafe extern "C" fn(
    sys::cl_command_queue,
    sys::cl_uint,
    *const sys::cl_mem,
    sys::cl_uint,
    *const sys::cl_event,
    *mut sys::cl_event,
) -> sys::cl_int;
/// `clCreateSemaphoreWithPropertiesKHR_fn`.
type CreateSemaphoreFn = unsafe extern "C" fn(
    sys::cl_context,
    *const cl_semaphore_properties_khr,
    *mut sys::cl_int,
) -> cl_semaphore_khr;
/// `clEnqueueWaitSemaphoresKHR_fn` and `clEnqueueSignalSemaphoresKHR_fn` (one signature).
type EnqueueSemaphoresFn = unsafe extern "C" fn(
    sys::cl_command_queue,
    sys::cl_uint,
    *const cl_semaphore_khr,
    *const cl_semaphore_payload_khr,
    sys::cl_uint,
    *const sys::cl_event,
    *mut sys::cl_event,
) -> sys::cl_int;
/// `clReleaseSemaphoreKHR_fn` and `clRetainSemaphoreKHR_fn`.
type SemaphoreRefFn = unsafe extern "C" fn(cl_semaphore_khr) -> sys::cl_int;
/// `clGetSemaphoreInfoKHR_fn`.
type GetSemaphoreInfoFn = unsafe extern "C" fn(
    cl_semaphore_khr,
    cl_semaphore_info_khr,
    usize,
    *mut c_void,
    *mut usize,
) -> sys::cl_int;
/// `clGetSemaphoreHandleForTypeKHR_fn`.
type GetSemaphoreHandleFn = unsafe extern "C" fn(
    cl_semaphore_khr,
    sys::cl_device_id,
    cl_external_semaphore_handle_type_khr,
    usize,
    *mut c_void,
    *mut usize,
) -> sys::cl_int;

/// Looks `name` up on `platform` and reinterprets it as `F`.
///
/// # Safety
///
/// As [`crate::platform::get_extension_function_address`]; `F` is the function pointer type the
/// extension specifies for `name`.
unsafe fn lookup<F: Copy>(platform: sys::cl_platform_id, name: &CStr) -> Option<F> {
    // SAFETY: the caller's obligations.
    let p = unsafe { crate::platform::get_extension_function_address(platform, name) }?;
    debug_assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
    // SAFETY: `F` is a function pointer type (same size as the address) with the signature
    // the extension specifies (caller's obligation).
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

/// Calls an entry point that takes a list of objects (an empty one is refused before the driver),
/// the wait list and the event out-parameter: memory acquire/release, semaphore wait/signal.
///
/// # Safety
///
/// `call(n, objects, num_events, event_list, event_out)` forwards to one such entry point, with
/// handles that meet the obligations of the method calling this.
unsafe fn enqueue_objects<T>(
    objects: &[T],
    wait: &[sys::cl_event],
    call: impl FnOnce(
        sys::cl_uint,
        *const T,
        sys::cl_uint,
        *const sys::cl_event,
        *mut sys::cl_event,
    ) -> sys::cl_int,
) -> Result<sys::cl_event, ClError> {
    if objects.is_empty() {
        return Err(ClError::InvalidValue);
    }
    let n = crate::count(objects.len())?;
    // SAFETY: the caller's obligation; `n` is the length of `objects`.
    unsafe { crate::queue::enqueue(wait, |nw, w, ev| call(n, objects.as_ptr(), nw, w, ev)) }
}

/// The `cl_khr_external_memory` entry points of one platform. `Copy`: plain function pointers,
/// valid for the life of the process once loaded (the ICD loader never unloads a driver).
#[derive(Clone, Copy, Debug)]
pub struct ExternalMemoryFns {
    acquire: EnqueueMemObjectsFn,
    release: EnqueueMemObjectsFn,
}

impl ExternalMemoryFns {
    /// Looks the entry points up on `platform`; `None` when the platform has either missing.
    ///
    /// # Safety
    ///
    /// 1. `platform` is a platform id of an OpenCL 1.2 or newer platform.
    pub unsafe fn load(platform: sys::cl_platform_id) -> Option<ExternalMemoryFns> {
        // SAFETY: obligation 1; each name is looked up as the type the extension specifies.
        unsafe {
            Some(ExternalMemoryFns {
                acquire: lookup(platform, c"clEnqueueAcquireExternalMemObjectsKHR")?,
                release: lookup(platform, c"clEnqueueReleaseExternalMemObjectsKHR")?,
            })
        }
    }

    /// [`clEnqueueAcquireExternalMemObjectsKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueAcquireExternalMemObjectsKHR.html):
    /// hands `mems` from the exporting API to OpenCL.
    ///
    /// # Errors
    ///
    /// The driver's status; `CL_INVALID_VALUE` for an empty list (checked first).
    ///
    /// # Safety
    ///
    /// 1. `queue`, every `mems` entry and every `wait` event are valid and of one context; each
    ///    memory object was created from an external memory handle.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_acquire(
        &self,
        queue: sys::cl_command_queue,
        mems: &[sys::cl_mem],
        wait: &[sys::cl_event],
    ) -> Result<sys::cl_event, ClError> {
        let f = self.acquire;
        // SAFETY: obligations 1 and 2.
        unsafe { enqueue_objects(mems, wait, |n, m, nw, w, ev| f(queue, n, m, nw, w, ev)) }
    }

    /// [`clEnqueueReleaseExternalMemObjectsKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueReleaseExternalMemObjectsKHR.html):
    /// hands `mems` back to the exporting API.
    ///
    /// # Errors
    ///
    /// As [`ExternalMemoryFns::enqueue_acquire`].
    ///
    /// # Safety
    ///
    /// As [`ExternalMemoryFns::enqueue_acquire`].
    pub unsafe fn enqueue_release(
        &self,
        queue: sys::cl_command_queue,
        mems: &[sys::cl_mem],
        wait: &[sys::cl_event],
    ) -> Result<sys::cl_event, ClError> {
        let f = self.release;
        // SAFETY: obligations 1 and 2.
        unsafe { enqueue_objects(mems, wait, |n, m, nw, w, ev| f(queue, n, m, nw, w, ev)) }
    }
}

/// The `cl_khr_semaphore` / `cl_khr_external_semaphore` entry points of one platform.
/// `export_handle` is `None` on a platform with semaphores but without the external extension.
#[derive(Clone, Copy, Debug)]
pub struct SemaphoreFns {
    create: CreateSemaphoreFn,
    wait: EnqueueSemaphoresFn,
    signal: EnqueueSemaphoresFn,
    info: GetSemaphoreInfoFn,
    release: SemaphoreRefFn,
    retain: SemaphoreRefFn,
    export_handle: Option<GetSemaphoreHandleFn>,
}

impl SemaphoreFns {
    /// Looks the entry points up on `platform`; `None` when any `cl_khr_semaphore` one is
    /// missing.
    ///
    /// # Safety
    ///
    /// 1. `platform` is a platform id of an OpenCL 1.2 or newer platform.
    pub unsafe fn load(platform: sys::cl_platform_id) -> Option<SemaphoreFns> {
        // SAFETY: obligation 1; each name is looked up as the type the extension specifies.
        unsafe {
            Some(SemaphoreFns {
                create: lookup(platform, c"clCreateSemaphoreWithPropertiesKHR")?,
                wait: lookup(platform, c"clEnqueueWaitSemaphoresKHR")?,
                signal: lookup(platform, c"clEnqueueSignalSemaphoresKHR")?,
                info: lookup(platform, c"clGetSemaphoreInfoKHR")?,
                release: lookup(platform, c"clReleaseSemaphoreKHR")?,
                retain: lookup(platform, c"clRetainSemaphoreKHR")?,
                export_handle: lookup(platform, c"clGetSemaphoreHandleForTypeKHR"),
            })
        }
    }

    /// [`clCreateSemaphoreWithPropertiesKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateSemaphoreWithPropertiesKHR.html):
    /// a semaphore from a 0-terminated property list (an import names its handle type as a key
    /// followed by the handle).
    ///
    /// # Errors
    ///
    /// The driver's status; `CL_INVALID_VALUE` for an empty or non-terminated list (checked
    /// first).
    ///
    /// # Safety
    ///
    /// 1. `context` is valid; device ids in `properties` are of it.
    /// 2. A file descriptor in `properties` is owned by the caller and given to the driver: on
    ///    success the driver owns it (the spec's transfer of ownership), so the caller must not
    ///    close it.
    /// 3. The caller owns (and must release) the returned semaphore.
    pub unsafe fn create(
        &self,
        context: sys::cl_context,
        properties: &[cl_semaphore_properties_khr],
    ) -> Result<cl_semaphore_khr, ClError> {
        if properties.last() != Some(&0) {
            return Err(ClError::InvalidValue);
        }
        // SAFETY: obligations 1-3; the list is 0-terminated.
        created(|err| unsafe { (self.create)(context, properties.as_ptr(), err) })
    }

    /// [`clEnqueueWaitSemaphoresKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueWaitSemaphoresKHR.html):
    /// later commands of `queue` wait until each binary semaphore is signalled (and unsignal it).
    ///
    /// # Errors
    ///
    /// The driver's status; `CL_INVALID_VALUE` for an empty list (checked first).
    ///
    /// # Safety
    ///
    /// 1. `queue`, every semaphore and every `wait` event are valid and of one context.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_wait(
        &self,
        queue: sys::cl_command_queue,
        semaphores: &[cl_semaphore_khr],
        wait: &[sys::cl_event],
    ) -> Result<sys::cl_event, ClError> {
        let f = self.wait;
        // SAFETY: obligations 1 and 2; binary semaphores take no payload list.
        unsafe {
            enqueue_objects(semaphores, wait, |n, s, nw, w, ev| {
                f(queue, n, s, std::ptr::null(), nw, w, ev)
            })
        }
    }

    /// [`clEnqueueSignalSemaphoresKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSignalSemaphoresKHR.html):
    /// signals each binary semaphore once the earlier commands of `queue` (and `wait`) completed.
    ///
    /// # Errors
    ///
    /// As [`SemaphoreFns::enqueue_wait`].
    ///
    /// # Safety
    ///
    /// As [`SemaphoreFns::enqueue_wait`].
    pub unsafe fn enqueue_signal(
        &self,
        queue: sys::cl_command_queue,
        semaphores: &[cl_semaphore_khr],
        wait: &[sys::cl_event],
    ) -> Result<sys::cl_event, ClError> {
        let f = self.signal;
        // SAFETY: obligations 1 and 2; binary semaphores take no payload list.
        unsafe {
            enqueue_objects(semaphores, wait, |n, s, nw, w, ev| {
                f(queue, n, s, std::ptr::null(), nw, w, ev)
            })
        }
    }

    /// [`clGetSemaphoreInfoKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetSemaphoreInfoKHR.html):
    /// one semaphore parameter, decoded as `T` (see [`crate::info`]).
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `semaphore` is valid.
    pub unsafe fn get_info<T: crate::InfoValue>(
        &self,
        semaphore: cl_semaphore_khr,
        param: cl_semaphore_info_khr,
    ) -> Result<T, ClError> {
        let f = self.info;
        // SAFETY: the closure forwards to clGetSemaphoreInfoKHR with a valid handle.
        unsafe { crate::info::query(|size, value, ret| f(semaphore, param, size, value, ret)) }
    }

    /// [`clRetainSemaphoreKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clRetainSemaphoreKHR.html).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `semaphore` is valid; the caller owns the added reference.
    pub unsafe fn retain(&self, semaphore: cl_semaphore_khr) -> Result<(), ClError> {
        // SAFETY: obligation 1.
        check(unsafe { (self.retain)(semaphore) })
    }

    /// [`clReleaseSemaphoreKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clReleaseSemaphoreKHR.html).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `semaphore` is valid and the caller gives up one reference it owns.
    pub unsafe fn release(&self, semaphore: cl_semaphore_khr) -> Result<(), ClError> {
        // SAFETY: obligation 1.
        check(unsafe { (self.release)(semaphore) })
    }

    /// Whether the platform has `clGetSemaphoreHandleForTypeKHR` (`cl_khr_external_semaphore`).
    pub fn can_export(&self) -> bool {
        self.export_handle.is_some()
    }

    /// [`clGetSemaphoreHandleForTypeKHR`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetSemaphoreHandleForTypeKHR.html)
    /// for a file-descriptor handle type: a new file descriptor the caller owns.
    ///
    /// # Errors
    ///
    /// The driver's status; `CL_INVALID_OPERATION` when the platform lacks the entry point.
    ///
    /// # Safety
    ///
    /// 1. `semaphore` and `device` are valid; the semaphore was created exportable as
    ///    `handle_type`, a file-descriptor type (`OPAQUE_FD`, `SYNC_FD`).
    /// 2. The caller owns (and must close) the returned descriptor.
    pub unsafe fn get_handle_fd(
        &self,
        semaphore: cl_semaphore_khr,
        device: sys::cl_device_id,
        handle_type: cl_external_semaphore_handle_type_khr,
    ) -> Result<i32, ClError> {
        let f = self.export_handle.ok_or(ClError::InvalidOperation)?;
        let mut fd: i32 = -1;
        let mut size = 0usize;
        // SAFETY: obligation 1; `fd` has room for the `int` a file-descriptor handle is.
        check(unsafe {
            f(
                semaphore,
                device,
                handle_type,
                size_of::<i32>(),
                (&raw mut fd).cast(),
                &mut size,
            )
        })?;
        if size != size_of::<i32>() || fd < 0 {
            return Err(ClError::InvalidValue);
        }
        Ok(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_lists_are_refused_before_the_driver() {
        let null = std::ptr::null_mut();
        // A stand-in that must never be called.
        unsafe extern "C" fn never(
            _: sys::cl_command_queue,
            _: sys::cl_uint,
            _: *const sys::cl_mem,
            _: sys::cl_uint,
            _: *const sys::cl_event,
            _: *mut sys::cl_event,
        ) -> sys::cl_int {
            unreachable!("called the driver")
        }
        let fns = ExternalMemoryFns {
            acquire: never,
            release: never,
        };
        // SAFETY: refused before any handle is used.
        unsafe {
            assert_eq!(
                fns.enqueue_acquire(null, &[], &[]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                fns.enqueue_release(null, &[], &[]),
                Err(ClError::InvalidValue)
            );
        }
    }

    #[test]
    fn empty_semaphore_lists_are_refused_before_the_driver() {
        // Stand-ins that must never be called.
        unsafe extern "C" fn never(
            _: sys::cl_command_queue,
            _: sys::cl_uint,
            _: *const cl_semaphore_khr,
            _: *const cl_semaphore_payload_khr,
            _: sys::cl_uint,
            _: *const sys::cl_event,
            _: *mut sys::cl_event,
        ) -> sys::cl_int {
            unreachable!("called the driver")
        }
        unsafe extern "C" fn never_create(
            _: sys::cl_context,
            _: *const cl_semaphore_properties_khr,
            _: *mut sys::cl_int,
        ) -> cl_semaphore_khr {
            unreachable!("called the driver")
        }
        unsafe extern "C" fn never_ref(_: cl_semaphore_khr) -> sys::cl_int {
            unreachable!("called the driver")
        }
        unsafe extern "C" fn never_info(
            _: cl_semaphore_khr,
            _: cl_semaphore_info_khr,
            _: usize,
            _: *mut c_void,
            _: *mut usize,
        ) -> sys::cl_int {
            unreachable!("called the driver")
        }
        let fns = SemaphoreFns {
            create: never_create,
            wait: never,
            signal: never,
            info: never_info,
            release: never_ref,
            retain: never_ref,
            export_handle: None,
        };
        let null = std::ptr::null_mut();
        // SAFETY: refused before any handle is used.
        unsafe {
            assert_eq!(fns.enqueue_wait(null, &[], &[]), Err(ClError::InvalidValue));
            assert_eq!(
                fns.enqueue_signal(null, &[], &[]),
                Err(ClError::InvalidValue)
            );
        }
    }
}
