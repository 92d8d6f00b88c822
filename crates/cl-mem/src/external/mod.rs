//! Memory and semaphores shared with another API without a copy (`cl_khr_external_memory`,
//! `cl_khr_external_semaphore`, both with their `_opaque_fd` handle type; `cl_khr_device_uuid`
//! to find the same GPU in both APIs). The CUDA side is [`crate::cuda`] (feature `cuda`).
//!
//! # Import
//!
//! [`Buffer::from_external`] turns an [`ExternalMemory`] (a file descriptor another API exported,
//! its size, and a keep-alive of the exporter's allocation) into an ordinary [`Buffer`]: kernels,
//! transfers, maps, sub-buffers and clones work as on any buffer, through the same command record.
//!
//! **Ownership.** The descriptor is an [`OwnedFd`], consumed by the import: the spec transfers
//! it to the driver on success ("the application must not perform any operations on the file
//! descriptor after a successful import"); on a refusal or a failed import it is closed here. The
//! keep-alive (for CUDA, the allocation handle and its mapping) is dropped by the memory object's
//! destructor callback, which the driver calls after the last command that used the memory
//! completed and the last reference went: the exporter's allocation is never freed while OpenCL
//! can use it, however many clones, kernels or pending commands hold the buffer, and the exporter
//! may drop its own handle first.
//!
//! # Acquire and release
//!
//! OpenCL may use external memory only between an acquire and a release command. The scheme is
//! the simplest one that stays correct for every command path: the import acquires on the queue
//! it is given; the memory then stays OpenCL's, for commands on any queue of the context (the
//! spec's own example acquires on one queue and uses the memory on another, ordered by events,
//! which is what the command record does), until [`Buffer::hand_back`] enqueues a release after
//! every recorded command. While handed back, every command and map of the allocation is refused
//! with [`Error::HandedBack`] before the driver; [`Buffer::acquire_external`] takes it back after
//! the caller's wait list (the exporter's finished work: a semaphore wait or a host wait). When
//! the last handle goes, a buffer still acquired is released after its pending commands, so what
//! OpenCL wrote is the exporter's again.
//!
//! Rejected: acquiring and releasing around every command (a release after each kernel costs a
//! driver round trip per command and hands the memory back at moments the caller did not
//! choose); acquiring lazily on first use after a hand-back (it would race the exporter's work,
//! which only the caller can order).
//!
//! # Ordering between the APIs
//!
//! With semaphores ([`Semaphore`]; a binary semaphore OpenCL creates and exports as a file
//! descriptor, which CUDA imports): OpenCL -> exporter: `hand_back`, then
//! [`Queue::signal_semaphore`], and the exporter waits on its stream; exporter -> OpenCL: the
//! exporter signals, [`Queue::wait_semaphore`], then `acquire_external` after that event. No
//! host thread waits.
//!
//! Without semaphores (the driver lists none, or cannot export one): the host orders the two
//! sides. OpenCL -> exporter: wait for `hand_back`'s event ([`Event::wait`]) before the exporter
//! enqueues its work; exporter -> OpenCL: synchronise the exporter's stream, then
//! `acquire_external`.

#[cfg(feature = "cuda")]
pub mod cuda;
mod raw_ext;

use std::any::Any;
use std::fmt;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};

use cl_raw::external::{ExternalMemoryFns, SemaphoreFns};
use cl_raw::object::Object;
use cl_raw::{mem as raw_mem, sys, Version};

use crate::buffer::{check_size, drop_when_destroyed, Buffer};
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::raw_handle::{drop_releases, release_in_drop, RawHandle};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::event::{checked_list, Event};
use crate::runtime::queue::Queue;
use crate::runtime::track::{Access, ExternalState, Handover, Tracked};

/// An external memory handle type (`cl_external_memory_handle_type_khr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemoryHandleType(pub u32);

impl MemoryHandleType {
    /// `CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR`: a POSIX file descriptor
    /// (`cl_khr_external_memory_opaque_fd`; CUDA's `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`).
    pub const OPAQUE_FD: MemoryHandleType =
        MemoryHandleType(raw_ext::CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR);
    /// `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR` (`cl_khr_external_memory_dma_buf`).
    pub const DMA_BUF: MemoryHandleType =
        MemoryHandleType(raw_ext::CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR);
}

/// An external semaphore handle type (`cl_external_semaphore_handle_type_khr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SemaphoreHandleType(pub u32);

impl SemaphoreHandleType {
    /// `CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR` (`cl_khr_external_semaphore_opaque_fd`; CUDA's
    /// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD`).
    pub const OPAQUE_FD: SemaphoreHandleType =
        SemaphoreHandleType(raw_ext::CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR);
    /// `CL_SEMAPHORE_HANDLE_SYNC_FD_KHR` (`cl_khr_external_semaphore_sync_fd`).
    pub const SYNC_FD: SemaphoreHandleType =
        SemaphoreHandleType(raw_ext::CL_SEMAPHORE_HANDLE_SYNC_FD_KHR);
}

impl Device {
    /// The handle types external memory can be imported from
    /// (`CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR`); empty, without asking the driver,
    /// when the device does not list `cl_khr_external_memory`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn external_memory_import_handle_types(&self) -> Result<Vec<MemoryHandleType>> {
        self.handle_types(
            "cl_khr_external_memory",
            raw_ext::CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR,
        )
        .map(|v| v.into_iter().map(MemoryHandleType).collect())
    }

    /// The handle types a semaphore can be imported from
    /// (`CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR`); empty without `cl_khr_external_semaphore`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn semaphore_import_handle_types(&self) -> Result<Vec<SemaphoreHandleType>> {
        self.handle_types(
            "cl_khr_external_semaphore",
            raw_ext::CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR,
        )
        .map(|v| v.into_iter().map(SemaphoreHandleType).collect())
    }

    /// The handle types a semaphore can be exported as
    /// (`CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`); empty without `cl_khr_external_semaphore`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetDeviceInfo`.
    pub fn semaphore_export_handle_types(&self) -> Result<Vec<SemaphoreHandleType>> {
        self.handle_types(
            "cl_khr_external_semaphore",
            raw_ext::CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
        )
        .map(|v| v.into_iter().map(SemaphoreHandleType).collect())
    }

    /// The device's UUID (`CL_DEVICE_UUID_KHR`, `cl_khr_device_uuid`): the same 16 bytes as
    /// Vulkan's `deviceUUID` and CUDA's `cuDeviceGetUuid` for the same GPU.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the device does not list `cl_khr_device_uuid` (checked
    /// first); [`Error::Cl`] from `clGetDeviceInfo`, `CL_INVALID_VALUE` for a size other than 16.
    pub fn uuid(&self) -> Result<[u8; raw_ext::CL_UUID_SIZE_KHR]> {
        if !self.has_extension("cl_khr_device_uuid")? {
            return Err(Error::Unsupported {
                feature: "CL_DEVICE_UUID_KHR",
                needs: "the cl_khr_device_uuid extension, which this device lacks".into(),
            });
        }
        let v: Vec<u8> = self.info(raw_ext::CL_DEVICE_UUID_KHR)?;
        v.try_into().map_err(|_| Error::Cl {
            call: "clGetDeviceInfo",
            status: cl_raw::ClError::InvalidValue,
        })
    }

    fn handle_types(&self, extension: &str, param: sys::cl_device_info) -> Result<Vec<u32>> {
        if !self.has_extension(extension)? {
            return Ok(Vec::new());
        }
        self.info(param)
    }

    /// [`Error::Unsupported`] unless the device lists `extension`.
    fn require_extension(&self, extension: &'static str, feature: &'static str) -> Result<()> {
        if self.has_extension(extension)? {
            Ok(())
        } else {
            Err(Error::Unsupported {
                feature,
                needs: format!("the {extension} extension, which this device lacks"),
            })
        }
    }
}

/// Memory another API exported, ready for [`Buffer::from_external`]: the handle, its size, and
/// what keeps the exporter's allocation alive until the driver destroyed the imported object.
pub struct ExternalMemory {
    fd: OwnedFd,
    handle_type: MemoryHandleType,
    size_bytes: usize,
    keep: Box<dyn Any + Send + Sync>,
}

impl ExternalMemory {
    /// An opaque file descriptor of `size_bytes` bytes (the exported allocation's size), with
    /// `keep` (the exporter's allocation, or `()` when the exporter's own reference lives on the
    /// other side of the descriptor) dropped once OpenCL can no longer use the memory.
    pub fn opaque_fd(
        fd: OwnedFd,
        size_bytes: usize,
        keep: impl Any + Send + Sync,
    ) -> ExternalMemory {
        ExternalMemory {
            fd,
            handle_type: MemoryHandleType::OPAQUE_FD,
            size_bytes,
            keep: Box::new(keep),
        }
    }
}

impl fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("fd", &self.fd.as_raw_fd())
            .field("handle_type", &self.handle_type)
            .field("size_bytes", &self.size_bytes)
            .finish_non_exhaustive()
    }
}

/// The acquire and release commands of one imported memory object, with its own reference to it.
struct ExternalMem {
    raw: sys::cl_mem,
    fns: ExternalMemoryFns,
}

// SAFETY: a memory object handle and plain function pointers; OpenCL 1.1+ API calls are
// thread-safe (OpenCL 3.0 spec, "Multiple Host Threads").
unsafe impl Send for ExternalMem {}
// SAFETY: as for `Send`; nothing in it is mutable.
unsafe impl Sync for ExternalMem {}

impl Handover for ExternalMem {
    fn enqueue(&self, queue: &Queue, acquire: bool, wait: &[sys::cl_event]) -> Result<Event> {
        let mems = [self.raw];
        let (call, ev) = if acquire {
            (
                "clEnqueueAcquireExternalMemObjectsKHR",
                // SAFETY: valid queue, memory object (our reference) and events of one context
                // (the caller's wait list is checked, recorded events are of the queue's
                // context); the object was imported from an external handle; we own the event.
                unsafe { self.fns.enqueue_acquire(queue.as_raw(), &mems, wait) },
            )
        } else {
            (
                "clEnqueueReleaseExternalMemObjectsKHR",
                // SAFETY: as above.
                unsafe { self.fns.enqueue_release(queue.as_raw(), &mems, wait) },
            )
        };
        // SAFETY: a fresh reference we own.
        unsafe { Event::adopt(ev, call) }
    }
}

drop_releases!(Mem: ExternalMem);

impl Buffer {
    /// Imports memory another API exported as a buffer of the queue's context, acquired on
    /// `queue` (see the module documentation of `external` for the acquire/release scheme
    /// and the ownership of the descriptor and the keep-alive). The buffer is imported for every
    /// device of the context (no `CL_MEM_DEVICE_HANDLE_LIST_KHR`): use a context of the exporting
    /// GPU.
    ///
    /// # Errors
    ///
    /// Checked first, each closing the descriptor and dropping the keep-alive:
    /// [`Error::Unsupported`] when the platform is older than 3.0
    /// (`clCreateBufferWithProperties`), the queue's device does not list
    /// `cl_khr_external_memory` or does not report the handle type, or the platform has no acquire
    /// and release entry points; [`Error::InvalidArgument`] for a zero or too large size or
    /// host-pointer flags. Then [`Error::Cl`] from `clCreateBufferWithProperties` (the descriptor
    /// closed), `clSetMemObjectDestructorCallback` or `clEnqueueAcquireExternalMemObjectsKHR`.
    pub fn from_external(queue: &Queue, flags: MemFlags, memory: ExternalMemory) -> Result<Buffer> {
        let context = queue.context();
        let device = queue.device();
        flags.check()?;
        if flags.intersects(MemFlags::HOST_PTR_FLAGS | MemFlags::ALLOC_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "external memory has no host pointer: USE_HOST_PTR, COPY_HOST_PTR and \
                 ALLOC_HOST_PTR are refused"
                    .into(),
            ));
        }
        if context.platform_version() < Version::V3_0 {
            return Err(Error::needs_version(
                "clCreateBufferWithProperties",
                Version::V3_0,
                "platform",
                context.platform_version(),
            ));
        }
        device.require_extension("cl_khr_external_memory", "Buffer::from_external")?;
        if !device
            .external_memory_import_handle_types()?
            .contains(&memory.handle_type)
        {
            return Err(Error::Unsupported {
                feature: "Buffer::from_external",
                needs: format!(
                    "external memory handle type {:#x}, which the device does not report in \
                     CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR",
                    memory.handle_type.0
                ),
            });
        }
        check_size(context, memory.size_bytes)?;
        // SAFETY: a platform id of a 3.0 platform (checked above).
        let Some(fns) = (unsafe { ExternalMemoryFns::load(context.platform().as_raw()) }) else {
            return Err(Error::Unsupported {
                feature: "Buffer::from_external",
                needs: "clEnqueueAcquireExternalMemObjectsKHR and \
                        clEnqueueReleaseExternalMemObjectsKHR, which this platform lacks"
                    .into(),
            });
        };
        let _span = tracing::debug_span!(
            "cl_mem::alloc",
            kind = "external buffer",
            bytes = memory.size_bytes,
            handle_type = memory.handle_type.0
        )
        .entered();
        let ExternalMemory {
            fd,
            handle_type,
            size_bytes,
            keep,
        } = memory;
        let fd_value = u64::try_from(fd.as_raw_fd())
            .map_err(|_| Error::InvalidArgument("a negative file descriptor".into()))?;
        let props = [u64::from(handle_type.0), fd_value, 0];
        // SAFETY: a valid context of a 3.0 platform; a 0-terminated property list naming a handle
        // type the device reports and a descriptor we own; no host pointer; we own the result.
        let raw = unsafe {
            raw_mem::create_buffer_with_properties(
                context.as_raw(),
                &props,
                flags.bits(),
                size_bytes,
                std::ptr::null_mut(),
            )
        }
        .map_err(Error::cl("clCreateBufferWithProperties"))?;
        // The driver owns the descriptor now (the spec's transfer of ownership): never close it.
        let _ = fd.into_raw_fd();
        drop_when_destroyed(raw, context, Box::new(keep))?;
        // SAFETY: `raw` is valid; the reference taken is the handover's own.
        unsafe { cl_raw::object::retain(cl_raw::object::Object::Mem, raw) }.map_err(|e| {
            release_in_drop(Object::Mem, raw);
            Error::cl("clRetainMemObject")(e)
        })?;
        let handover = ExternalMem { raw, fns };
        let list = checked_list(queue, &[])?;
        let acquired = handover.enqueue(queue, true, &list);
        let acquired = match acquired {
            Ok(ev) => ev,
            Err(e) => {
                release_in_drop(Object::Mem, raw);
                return Err(e);
            }
        };
        let tracked = Tracked::new_external_root(
            raw,
            size_bytes,
            ExternalState::acquired_on(queue, Box::new(handover)),
        );
        tracked.record(queue, Access::Write, &acquired);
        Ok(Buffer::root_tracked(
            raw,
            size_bytes,
            flags,
            context,
            std::ptr::null_mut(),
            tracked,
        ))
    }

    /// Hands external memory back to the API that exported it: a release on `queue`, after every
    /// command recorded for the allocation on any queue and after `wait`. Until
    /// [`Buffer::acquire_external`], commands and maps of the allocation (this buffer, its
    /// clones, sub-buffers and images) are refused with [`Error::HandedBack`]. The exporter may
    /// use the memory once the returned event completed: wait for it, or signal a
    /// [`Semaphore`] after it on the same in-order queue.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer is not external memory, is already handed
    /// back, or `queue` is of another context; [`Error::Mapped`] while the host maps any of it;
    /// [`Error::Cl`] from `clEnqueueReleaseExternalMemObjectsKHR`.
    pub fn hand_back(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue)?;
        self.tracked().switch_external(queue, wait, false)
    }

    /// Takes external memory back from the exporter: an acquire on `queue` after `wait` (the
    /// exporter's work, e.g. the event of [`Queue::wait_semaphore`]); later commands on any queue
    /// are ordered after it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer is not external memory, is already acquired,
    /// or `queue` is of another context; [`Error::Cl`] from
    /// `clEnqueueAcquireExternalMemObjectsKHR`.
    pub fn acquire_external(&self, queue: &Queue, wait: &[&Event]) -> Result<Event> {
        self.check_queue(queue)?;
        self.tracked().switch_external(queue, wait, true)
    }

    /// `None` for memory OpenCL allocated; for external memory, whether OpenCL holds it now
    /// (`Some(true)`: acquired) or it is handed back (`Some(false)`).
    pub fn external_acquired(&self) -> Option<bool> {
        self.tracked().external_acquired()
    }
}

/// A binary semaphore (`cl_khr_semaphore`) shared with another API: created by OpenCL and
/// exported as a file descriptor ([`Semaphore::new_exportable`], [`Semaphore::export_fd`]: what
/// CUDA imports), or imported from one ([`Semaphore::import_fd`]). Used through
/// [`Queue::wait_semaphore`] and [`Queue::signal_semaphore`]. Owns one reference: `Clone`
/// retains, `Drop` releases; a command holds a clone until it completed.
pub struct Semaphore {
    raw: raw_ext::cl_semaphore_khr,
    fns: SemaphoreFns,
    context: Context,
    device: Device,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"), the
// extension's objects included; the function table is plain function pointers.
unsafe impl Send for Semaphore {}
// SAFETY: as for `Send`; nothing in it is mutable.
unsafe impl Sync for Semaphore {}

impl Semaphore {
    /// The platform's semaphore entry points after the checks every constructor makes.
    fn checked_fns(
        context: &Context,
        device: &Device,
        extension: &'static str,
    ) -> Result<SemaphoreFns> {
        if !context.devices().contains(device) {
            return Err(Error::InvalidArgument(
                "the device is not one of the context's devices".into(),
            ));
        }
        device.require_version(Version::V1_2, "clGetExtensionFunctionAddressForPlatform")?;
        device.require_extension("cl_khr_semaphore", "Semaphore")?;
        device.require_extension(extension, "Semaphore")?;
        // SAFETY: a platform id of a 1.2+ platform (checked above).
        unsafe { SemaphoreFns::load(context.platform().as_raw()) }.ok_or(Error::Unsupported {
            feature: "Semaphore",
            needs: "the cl_khr_semaphore entry points, which this platform lacks".into(),
        })
    }

    fn create(
        context: &Context,
        device: &Device,
        fns: SemaphoreFns,
        extra: &[u64],
    ) -> Result<Semaphore> {
        let mut props = vec![
            u64::from(raw_ext::CL_SEMAPHORE_TYPE_KHR),
            u64::from(raw_ext::CL_SEMAPHORE_TYPE_BINARY_KHR),
            u64::from(raw_ext::CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR),
            device.as_raw() as u64,
            raw_ext::CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR,
        ];
        props.extend_from_slice(extra);
        props.push(0);
        // SAFETY: a valid context and one of its devices; a 0-terminated list; a descriptor in
        // `extra` is given to the driver by the caller; we own the result.
        let raw = unsafe { fns.create(context.as_raw(), &props) }
            .map_err(Error::cl("clCreateSemaphoreWithPropertiesKHR"))?;
        Ok(Semaphore {
            raw,
            fns,
            context: context.clone(),
            device: *device,
        })
    }

    /// A binary semaphore of `device` that can be exported as an opaque file descriptor
    /// (`CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`): OpenCL signals it, CUDA (or Vulkan) waits on it,
    /// and the reverse.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the device does not list `cl_khr_semaphore`,
    /// `cl_khr_external_semaphore` and `cl_khr_external_semaphore_opaque_fd`, or does not report
    /// `OPAQUE_FD` as an export handle type (checked first); [`Error::InvalidArgument`] when the
    /// device is not of the context; [`Error::Cl`] from `clCreateSemaphoreWithPropertiesKHR`.
    pub fn new_exportable(context: &Context, device: &Device) -> Result<Semaphore> {
        let fns = Semaphore::checked_fns(context, device, "cl_khr_external_semaphore_opaque_fd")?;
        if !device
            .semaphore_export_handle_types()?
            .contains(&SemaphoreHandleType::OPAQUE_FD)
            || !fns.can_export()
        {
            return Err(Error::Unsupported {
                feature: "Semaphore::new_exportable",
                needs: "OPAQUE_FD in CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR and \
                        clGetSemaphoreHandleForTypeKHR"
                    .into(),
            });
        }
        Semaphore::create(
            context,
            device,
            fns,
            &[
                u64::from(raw_ext::CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR),
                u64::from(SemaphoreHandleType::OPAQUE_FD.0),
                raw_ext::CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR,
            ],
        )
    }

    /// Imports a binary semaphore another API exported as an opaque file descriptor. The
    /// descriptor is consumed: the driver owns it after a successful import (the spec's transfer
    /// of ownership); after a refusal or a failure it is closed here.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the device does not list the extensions or does not report
    /// `OPAQUE_FD` as an import handle type (checked first); [`Error::InvalidArgument`] when
    /// the device is not of the context; [`Error::Cl`] from `clCreateSemaphoreWithPropertiesKHR`.
    pub fn import_fd(context: &Context, device: &Device, fd: OwnedFd) -> Result<Semaphore> {
        let fns = Semaphore::checked_fns(context, device, "cl_khr_external_semaphore_opaque_fd")?;
        if !device
            .semaphore_import_handle_types()?
            .contains(&SemaphoreHandleType::OPAQUE_FD)
        {
            return Err(Error::Unsupported {
                feature: "Semaphore::import_fd",
                needs: "OPAQUE_FD in CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR".into(),
            });
        }
        let value = u64::try_from(fd.as_raw_fd())
            .map_err(|_| Error::InvalidArgument("a negative file descriptor".into()))?;
        let s = Semaphore::create(
            context,
            device,
            fns,
            &[u64::from(SemaphoreHandleType::OPAQUE_FD.0), value],
        )?;
        // The driver owns the descriptor now: never close it.
        let _ = fd.into_raw_fd();
        Ok(s)
    }

    /// A new file descriptor for this semaphore's payload (`clGetSemaphoreHandleForTypeKHR`,
    /// `OPAQUE_FD`), owned by the caller: what CUDA's `cuImportExternalSemaphore` takes (and
    /// then owns).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the semaphore was not created exportable (checked first);
    /// [`Error::Cl`] from `clGetSemaphoreHandleForTypeKHR`.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        // SAFETY: a valid semaphore; a 1-byte `cl_bool`-sized answer is read as `u32` by the
        // strict decoder only when the driver says 4 bytes.
        let exportable: sys::cl_bool = unsafe {
            self.fns
                .get_info(self.raw, raw_ext::CL_SEMAPHORE_EXPORTABLE_KHR)
        }
        .map_err(Error::cl("clGetSemaphoreInfoKHR"))?;
        if exportable == sys::CL_FALSE {
            return Err(Error::Unsupported {
                feature: "Semaphore::export_fd",
                needs: "a semaphore created exportable (Semaphore::new_exportable)".into(),
            });
        }
        // SAFETY: a valid semaphore and device, created exportable as OPAQUE_FD (a
        // file-descriptor type); we own the descriptor returned.
        let fd = unsafe {
            self.fns.get_handle_fd(
                self.raw,
                self.device.as_raw(),
                SemaphoreHandleType::OPAQUE_FD.0,
            )
        }
        .map_err(Error::cl("clGetSemaphoreHandleForTypeKHR"))?;
        // SAFETY: a fresh descriptor the driver gave us; nothing else owns it.
        Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }

    /// The raw handle (still owned by `self`).
    pub fn as_raw(&self) -> raw_ext::cl_semaphore_khr {
        self.raw
    }

    /// `CL_SEMAPHORE_REFERENCE_COUNT_KHR` (for leak tests).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetSemaphoreInfoKHR`.
    pub fn reference_count(&self) -> Result<u32> {
        // SAFETY: a valid semaphore.
        unsafe {
            self.fns
                .get_info(self.raw, raw_ext::CL_SEMAPHORE_REFERENCE_COUNT_KHR)
        }
        .map_err(Error::cl("clGetSemaphoreInfoKHR"))
    }

    fn enqueue(&self, queue: &Queue, wait: &[&Event], signal: bool) -> Result<Event> {
        if queue.context() != &self.context {
            return Err(Error::InvalidArgument(
                "the semaphore is of another context than the queue".into(),
            ));
        }
        if *queue.device() != self.device {
            return Err(Error::InvalidArgument(
                "the semaphore was created for another device than the queue's".into(),
            ));
        }
        let list = checked_list(queue, wait)?;
        let sems = [self.raw];
        let (call, ev) = if signal {
            (
                "clEnqueueSignalSemaphoresKHR",
                // SAFETY: valid queue, semaphore and events of one context (checked); we own the
                // event.
                unsafe { self.fns.enqueue_signal(queue.as_raw(), &sems, &list) },
            )
        } else {
            (
                "clEnqueueWaitSemaphoresKHR",
                // SAFETY: as above.
                unsafe { self.fns.enqueue_wait(queue.as_raw(), &sems, &list) },
            )
        };
        let ev = ev.map_err(Error::cl(call))?;
        // SAFETY: a fresh reference we own.
        let ev = unsafe { Event::from_raw(ev) };
        // The command holds the semaphore until it completed, whatever the caller drops.
        let keep = self.clone();
        if let Err(e) = ev.on_complete(move |_| drop(keep)) {
            tracing::warn!(error = %e, "could not defer a semaphore's release; waiting for the command");
            ev.wait()?;
        }
        Ok(ev)
    }
}

impl Clone for Semaphore {
    fn clone(&self) -> Semaphore {
        // SAFETY: a valid semaphore; the new reference is the clone's.
        if let Err(e) = unsafe { self.fns.retain(self.raw) } {
            tracing::error!(status = %e, "clRetainSemaphoreKHR failed");
        }
        Semaphore {
            raw: self.raw,
            fns: self.fns,
            context: self.context.clone(),
            device: self.device,
        }
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        // SAFETY: we own one reference and give it up here.
        if let Err(e) = unsafe { self.fns.release(self.raw) } {
            crate::error::drop_status("clReleaseSemaphoreKHR", e);
        }
    }
}

crate::raw_handle::debug_fields!(Semaphore: raw, device, ..);

impl Queue {
    /// Later commands of this queue wait until `semaphore` is signalled (by another API or
    /// another queue), and unsignal it: `clEnqueueWaitSemaphoresKHR`. Follow it with
    /// [`Buffer::acquire_external`] after the returned event.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the semaphore is of another context or device, or for
    /// events of another context; [`Error::Cl`] from the call.
    pub fn wait_semaphore(&self, semaphore: &Semaphore, wait: &[&Event]) -> Result<Event> {
        semaphore.enqueue(self, wait, false)
    }

    /// Signals `semaphore` once this queue's earlier commands (and `wait`) completed:
    /// `clEnqueueSignalSemaphoresKHR`. After [`Buffer::hand_back`] on the same in-order queue,
    /// the other API may use the memory once it waited on the semaphore.
    ///
    /// # Errors
    ///
    /// As [`Queue::wait_semaphore`].
    pub fn signal_semaphore(&self, semaphore: &Semaphore, wait: &[&Event]) -> Result<Event> {
        semaphore.enqueue(self, wait, true)
    }
}
