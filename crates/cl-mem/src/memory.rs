//! What every memory object shares: [`MemObject`] (the raw handle plus common queries),
//! [`MemFlags`] and [`MemObjectType`].

use std::ffi::c_void;
use std::hash::Hash;

use crate::raw_handle::{
    clone_retains, debug_fields, drop_releases, eq_by_handle, get_info, get_info_retained,
};
use bitflags::bitflags;
use cl_raw::object::{self, Object};
use cl_raw::{sys, InfoValue, Version};

use crate::error::{Error, Result};
use crate::runtime::context::Context;
use crate::runtime::extra;

bitflags! {
    /// `cl_mem_flags` for buffers and images (SVM has its own flags).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemFlags: sys::cl_mem_flags {
        /// `CL_MEM_READ_WRITE` (the default when no access flag is given).
        const READ_WRITE = sys::CL_MEM_READ_WRITE;
        /// `CL_MEM_WRITE_ONLY`: kernels only write.
        const WRITE_ONLY = sys::CL_MEM_WRITE_ONLY;
        /// `CL_MEM_READ_ONLY`: kernels only read.
        const READ_ONLY = sys::CL_MEM_READ_ONLY;
        /// `CL_MEM_USE_HOST_PTR`: the object lives in caller memory.
        const USE_HOST_PTR = sys::CL_MEM_USE_HOST_PTR;
        /// `CL_MEM_ALLOC_HOST_PTR`: host-accessible allocation.
        const ALLOC_HOST_PTR = sys::CL_MEM_ALLOC_HOST_PTR;
        /// `CL_MEM_COPY_HOST_PTR`: initialise from caller memory.
        const COPY_HOST_PTR = sys::CL_MEM_COPY_HOST_PTR;
        /// `CL_MEM_HOST_WRITE_ONLY` (1.2).
        const HOST_WRITE_ONLY = sys::CL_MEM_HOST_WRITE_ONLY;
        /// `CL_MEM_HOST_READ_ONLY` (1.2).
        const HOST_READ_ONLY = sys::CL_MEM_HOST_READ_ONLY;
        /// `CL_MEM_HOST_NO_ACCESS` (1.2).
        const HOST_NO_ACCESS = sys::CL_MEM_HOST_NO_ACCESS;
        /// `CL_MEM_KERNEL_READ_AND_WRITE` (2.0, images).
        const KERNEL_READ_AND_WRITE = sys::CL_MEM_KERNEL_READ_AND_WRITE;
    }
}

impl MemFlags {
    /// The flags that take a host pointer (`USE_HOST_PTR`, `COPY_HOST_PTR`).
    pub(crate) const HOST_PTR_FLAGS: MemFlags =
        MemFlags::USE_HOST_PTR.union(MemFlags::COPY_HOST_PTR);

    /// Refuses host reads (`reading`) of `what` (`"a buffer"`, `"an image"`) made with these flags
    /// when they hold `HOST_WRITE_ONLY` or `HOST_NO_ACCESS`, and host writes when they hold
    /// `HOST_READ_ONLY` or `HOST_NO_ACCESS` (the driver's `CL_INVALID_OPERATION`), naming the
    /// flags that forbid it.
    pub(crate) fn check_host_access(self, reading: bool, what: &str) -> Result<()> {
        let (verb, forbidden) = if reading {
            ("read", MemFlags::HOST_WRITE_ONLY | MemFlags::HOST_NO_ACCESS)
        } else {
            ("write", MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS)
        };
        let denied = self & forbidden;
        if denied.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "the host may not {verb} {what} created with {denied:?}"
            )))
        }
    }

    /// Refuses mutually exclusive flags (the spec's `CL_INVALID_VALUE` cases), which some drivers
    /// accept: more than one access flag, more than one host access flag, `USE_HOST_PTR` with
    /// `COPY_HOST_PTR` or `ALLOC_HOST_PTR`.
    pub(crate) fn check(self) -> Result<()> {
        let access = self & (MemFlags::READ_WRITE | MemFlags::READ_ONLY | MemFlags::WRITE_ONLY);
        let host = self
            & (MemFlags::HOST_WRITE_ONLY | MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS);
        if access.bits().count_ones() > 1 {
            return Err(Error::InvalidArgument(format!(
                "conflicting access flags {access:?}"
            )));
        }
        if host.bits().count_ones() > 1 {
            return Err(Error::InvalidArgument(format!(
                "conflicting host access flags {host:?}"
            )));
        }
        if self.contains(MemFlags::USE_HOST_PTR)
            && self.intersects(MemFlags::COPY_HOST_PTR | MemFlags::ALLOC_HOST_PTR)
        {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR excludes COPY_HOST_PTR and ALLOC_HOST_PTR".into(),
            ));
        }
        Ok(())
    }
}

pub use crate::mem_type::MemObjectType;

/// Any memory object (buffer, sub-buffer, image, pipe): kernels, migration and the common
/// queries accept `&impl MemObject`.
///
/// # Safety
///
/// 1. [`RawHandle::as_raw`](crate::raw_handle::RawHandle::as_raw) returns a valid `cl_mem` that stays valid
///    (a reference is owned) as long as `self` is alive.
pub unsafe trait MemObject: crate::raw_handle::RawHandle<Raw = sys::cl_mem> {
    /// The command record this object's commands go through, when this crate keeps one
    /// (buffers, sub-buffers, images and [`Memory`] made from them): how a migration orders
    /// itself after the commands other queues have pending on the object. Not for implementors
    /// outside this crate (the default, none, is right for them).
    #[doc(hidden)]
    fn command_record(&self) -> Option<crate::runtime::kernel::KeepAlive> {
        None
    }

    /// `clGetMemObjectInfo`: every `CL_MEM_*` query of the object in one value (PyOpenCL's
    /// `get_info(mem_info.*)`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`, `clRetainContext` or `clRetainMemObject`.
    fn mem_info(&self) -> Result<MemInfo> {
        let mem = self.as_raw();
        let context = mem_context(mem)?;
        let version = context.platform_version();
        Ok(MemInfo {
            mem_type: mem_type(mem)?,
            flags: MemFlags::from_bits_retain(query(mem, sys::CL_MEM_FLAGS)?),
            size_bytes: query(mem, sys::CL_MEM_SIZE)?,
            context,
            map_count: query(mem, sys::CL_MEM_MAP_COUNT)?,
            reference_count: query(mem, sys::CL_MEM_REFERENCE_COUNT)?,
            host_ptr: query(mem, sys::CL_MEM_HOST_PTR)?,
            associated_object: mem_associated_object(mem)?,
            offset_bytes: query(mem, sys::CL_MEM_OFFSET)?,
            // Checked first: an older driver may hang or misbehave on the newer queries.
            uses_svm_pointer: match version >= Version::V2_0 {
                true => Some(query(mem, sys::CL_MEM_USES_SVM_POINTER)?),
                false => None,
            },
            properties: match version >= Version::V3_0 {
                true => Some(query(mem, extra::CL_MEM_PROPERTIES)?),
                false => None,
            },
        })
    }
}

/// What [`MemObject::mem_info`] returns: the object's `clGetMemObjectInfo` answers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MemInfo {
    /// `CL_MEM_TYPE`.
    pub mem_type: MemObjectType,
    /// `CL_MEM_FLAGS` as the driver reports them.
    pub flags: MemFlags,
    /// `CL_MEM_SIZE`, in bytes.
    pub size_bytes: usize,
    /// `CL_MEM_CONTEXT`, as a new owning [`Context`].
    pub context: Context,
    /// `CL_MEM_MAP_COUNT` (racy by nature).
    pub map_count: u32,
    /// `CL_MEM_REFERENCE_COUNT` (for tests and leak hunting; racy by nature); also
    /// [`RawHandle::reference_count`](crate::RawHandle::reference_count) on a sized type.
    pub reference_count: u32,
    /// `CL_MEM_HOST_PTR` as a raw address (null unless created with `USE_HOST_PTR`, or a
    /// sub-buffer of such a buffer). Only an address: reading through it is the caller's
    /// `unsafe` business (PyOpenCL refuses this query and offers `get_host_array`; see
    /// [`crate::Buffer::host_slice`]).
    pub host_ptr: *mut c_void,
    /// `CL_MEM_ASSOCIATED_MEMOBJECT` (1.1): the parent of a sub-buffer, the buffer of a 1-D
    /// image buffer; `None` for other objects. Owns a new reference.
    pub associated_object: Option<Memory>,
    /// `CL_MEM_OFFSET` (1.1): a sub-buffer's origin in its parent, in bytes (0 otherwise).
    pub offset_bytes: usize,
    /// `CL_MEM_USES_SVM_POINTER` (2.0): whether the object was created over an SVM pointer;
    /// `None` on an older platform.
    pub uses_svm_pointer: Option<bool>,
    /// `CL_MEM_PROPERTIES` (3.0): the property list given at creation (empty when none was);
    /// `None` on an older platform.
    pub properties: Option<Vec<u64>>,
}

/// One `clGetMemObjectInfo` answer; `mem` must be a valid object of a platform that knows `param`.
pub(crate) fn query<T: InfoValue>(mem: sys::cl_mem, param: u32) -> Result<T> {
    // SAFETY: callers pass a valid object and a parameter its platform knows.
    unsafe { get_info(Object::Mem, mem, param) }
}

/// `CL_MEM_TYPE` of a valid object.
pub(crate) fn mem_type(mem: sys::cl_mem) -> Result<MemObjectType> {
    query(mem, sys::CL_MEM_TYPE).map(MemObjectType::from_raw)
}

/// `CL_MEM_CONTEXT` of a valid object, as a new owning [`Context`].
pub(crate) fn mem_context(mem: sys::cl_mem) -> Result<Context> {
    // SAFETY: callers pass a valid object; a 1.0 parameter, the object's live context.
    unsafe { get_info_retained(Object::Mem, mem, sys::CL_MEM_CONTEXT) }
}

/// `CL_MEM_ASSOCIATED_MEMOBJECT` of a valid object, owning a new reference.
pub(crate) fn mem_associated_object(mem: sys::cl_mem) -> Result<Option<Memory>> {
    let m: sys::cl_mem = query(mem, sys::CL_MEM_ASSOCIATED_MEMOBJECT)?;
    if m.is_null() {
        return Ok(None);
    }
    // SAFETY: the driver returned a live object (the parent outlives its children).
    unsafe { object::retain(Object::Mem, m) }.map_err(Error::cl("clRetainMemObject"))?;
    // SAFETY: the reference just taken; a buffer finds its record in `into_buffer`.
    let mem = unsafe { Memory::adopt_untracked(m) };
    // A buffer keeps to its record (maps, other queues) as a kernel argument too.
    Ok(Some(match mem.into_buffer() {
        Ok(b) => Memory::from(b),
        Err(m) => m,
    }))
}

/// Any memory object (buffer, sub-buffer, image, pipe) as an owning handle: PyOpenCL's
/// `MemoryObject`. Owns one reference: `Clone` retains, `Drop` releases; equality and hashing
/// are by handle.
///
/// Use it to adopt handles from other libraries ([`Memory::from_raw`](Memory#method.from_raw),
/// the equivalent of `MemoryObject.from_int_ptr(ptr, retain=False)`) and to hold objects of mixed
/// kinds; narrow it with `Buffer::try_from(memory)` ([`crate::Image`] too).
pub struct Memory {
    raw: sys::cl_mem,
    /// The command record, when the handle came from a [`crate::Buffer`] (kernels then keep to
    /// its maps and queues as they do for the buffer).
    tracked: Option<std::sync::Arc<crate::runtime::track::Tracked>>,
    /// Counts this wrapper in [`crate::live_objects`].
    live: crate::runtime::live::Live<{ crate::runtime::live::MEM }>,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); a
// memory object may be queried, used and released from any thread.
unsafe impl Send for Memory {}
// SAFETY: as for `Send`.
unsafe impl Sync for Memory {}

impl Memory {
    /// Adopts one reference with no command record: for this crate's own conversions, which give
    /// the handle to a wrapper that finds its record itself (a `Buffer`, an `Image`).
    ///
    /// # Safety
    ///
    /// As [`Memory::from_raw`].
    pub(crate) unsafe fn adopt_untracked(raw: sys::cl_mem) -> Memory {
        Memory {
            raw,
            tracked: None,
            live: crate::runtime::live::Live::new(),
        }
    }

    /// A `Memory` owning one reference to `raw`, in the command record through `tracked`.
    pub(crate) fn with_record(
        raw: sys::cl_mem,
        tracked: std::sync::Arc<crate::runtime::track::Tracked>,
    ) -> Memory {
        Memory {
            live: crate::runtime::live::Live::new(),
            raw,
            tracked: Some(tracked),
        }
    }

    pub(crate) fn set_tracked(&mut self, tracked: std::sync::Arc<crate::runtime::track::Tracked>) {
        self.tracked = Some(tracked);
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Memory {
    crate::raw_handle::raw_handle_field!(Mem: sys::cl_mem);

    /// Adopts one reference (no retain): `from_int_ptr(ptr, retain=False)`.
    ///
    /// When another wrapper of this crate (a [`crate::Buffer`], sub-buffer or image) holds the
    /// same memory, the new `Memory` keeps to its command record: kernels given it are refused
    /// under that wrapper's maps and ordered after its other queues' commands.
    ///
    /// Never fails.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object.
    /// 2. The caller gives one reference it owns to the new `Memory`.
    /// 3. The record covers only what goes through this crate's wrappers: commands and maps of
    ///    the same memory made outside them (raw calls, another library) are ordered against
    ///    the ones made through this `Memory` by the caller, and none writes bytes that a live
    ///    map of this crate exposes as a slice.
    unsafe fn from_raw(raw: sys::cl_mem) -> Result<Memory> {
        Ok(Memory {
            raw,
            tracked: crate::runtime::track::Tracked::of_raw(raw),
            live: crate::runtime::live::Live::new(),
        })
    }

    /// The reference is released, not given away: the record's handle count goes down as in
    /// `Drop`.
    fn into_raw_for_release(self) -> sys::cl_mem {
        let mut this = std::mem::ManuallyDrop::new(self);
        drop(this.tracked.take());
        // SAFETY: `this` is never used again and its `Drop` never runs; the token is read once.
        drop(unsafe { std::ptr::read(&this.live) });
        this.raw
    }

    /// Gives the reference away without releasing it.
    fn into_raw(self) -> sys::cl_mem {
        let mut this = std::mem::ManuallyDrop::new(self);
        // The command record goes; the OpenCL reference stays with the caller, counted as a
        // handle of the allocation for good (`Buffer::is_unique`).
        if let Some(t) = this.tracked.take() {
            t.given_away();
        }
        // SAFETY: `this` is never used again and its `Drop` never runs; the token is read once.
        drop(unsafe { std::ptr::read(&this.live) });
        this.raw
    }
}

/// What a [`Buffer`](crate::Buffer) and an [`Image`](crate::Image) share as owners of one
/// reference to a memory object with a command record (fields `raw` and `tracked`): inside their
/// `unsafe impl RawHandle` (`tracked_mem!(raw_handle)`), `Raw`, `object`, `as_raw`,
/// `into_raw_for_release` and `into_raw`; outside (`tracked_mem!(Buffer { info, tracked, live })`,
/// naming every field that owns something), `into_raw_only`, `MemObject` and `KernelArg` (both
/// hand out the record), `Drop`, and equality and hashing by handle.
macro_rules! tracked_mem {
    (raw_handle) => {
        $crate::raw_handle::raw_handle_field!(Mem: cl_raw::sys::cl_mem);

        /// Without keeping the command record alive (the reference is released, not given away).
        fn into_raw_for_release(self) -> cl_raw::sys::cl_mem {
            self.into_raw_only()
        }

        /// Gives the reference away without releasing it. The allocation's command record stays
        /// alive until the commands it lists have finished, so a `from_raw` of the handle
        /// meanwhile still waits for them.
        fn into_raw(self) -> cl_raw::sys::cl_mem {
            self.tracked.keep_until_idle();
            self.into_raw_only()
        }
    };
    ($ty:ident { $($owning:ident),+ }) => {
        impl $ty {
            /// As `into_raw` without keeping the record (for `release` and conversions that
            /// carry the record themselves): the fields that own something (references, the
            /// record, the live count) are dropped, the handle's reference is not
            /// (`mem::forget(self)` would leak them).
            pub(crate) fn into_raw_only(self) -> cl_raw::sys::cl_mem {
                let this = std::mem::ManuallyDrop::new(self);
                // SAFETY: `this` is never used again and its `Drop` never runs; each field is
                // read once.
                unsafe {
                    $(drop(std::ptr::read(&this.$owning));)+
                }
                this.raw
            }
        }

        // SAFETY: `raw` is a valid memory object we hold a reference to for as long as `self`
        // lives.
        unsafe impl $crate::memory::MemObject for $ty {
            fn command_record(&self) -> Option<$crate::runtime::kernel::KeepAlive> {
                Some($crate::runtime::kernel::KeepAlive::tracked(&self.tracked))
            }
        }

        // SAFETY: a valid memory handle, kept alive by the kernel (it retains memory arguments).
        unsafe impl $crate::runtime::kernel::KernelArg for $ty {
            fn arg_value(&self) -> $crate::runtime::kernel::ArgValue<'_> {
                // The keep-alive is how the kernel finds the command record, and how the record
                // counts the kernel's slot as a handle (`Buffer::is_unique`).
                $crate::runtime::kernel::ArgValue::MemKeepAlive {
                    mem: self.raw,
                    keep_alive: $crate::runtime::kernel::KeepAlive::tracked(&self.tracked),
                }
            }
        }

        $crate::raw_handle::drop_releases!(Mem: $ty);
        $crate::raw_handle::eq_by_handle!(hash raw: $ty);
    };
}
pub(crate) use tracked_mem;

// SAFETY: `raw` is a valid object we hold a reference to while `self` lives.
unsafe impl MemObject for Memory {
    fn command_record(&self) -> Option<crate::runtime::kernel::KeepAlive> {
        self.tracked
            .as_deref()
            .map(crate::runtime::kernel::KeepAlive::tracked)
    }
}

// SAFETY: a valid handle, retained by the kernel while set.
unsafe impl crate::runtime::kernel::KernelArg for Memory {
    fn arg_value(&self) -> crate::runtime::kernel::ArgValue<'_> {
        match &self.tracked {
            Some(t) => crate::runtime::kernel::ArgValue::MemKeepAlive {
                mem: self.raw,
                keep_alive: crate::runtime::kernel::KeepAlive::tracked(t),
            },
            None => crate::runtime::kernel::ArgValue::Mem(self.raw),
        }
    }
}

clone_retains!(Mem: Memory { tracked, live });
drop_releases!(Mem: Memory);
eq_by_handle!(hash raw: Memory);
debug_fields!(Memory: raw);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_access_is_refused_naming_the_forbidding_flags() {
        let denied = |flags: MemFlags, reading| match flags.check_host_access(reading, "a buffer") {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        };
        let rw = MemFlags::READ_WRITE;
        assert_eq!(denied(rw, true), "");
        assert_eq!(denied(rw, false), "");
        let wo = rw | MemFlags::HOST_WRITE_ONLY;
        assert!(denied(wo, true)
            .contains("may not read a buffer created with MemFlags(HOST_WRITE_ONLY)"));
        assert_eq!(denied(wo, false), "");
        let ro = rw | MemFlags::HOST_READ_ONLY;
        assert_eq!(denied(ro, true), "");
        assert!(denied(ro, false)
            .contains("may not write a buffer created with MemFlags(HOST_READ_ONLY)"));
        let none = rw | MemFlags::HOST_NO_ACCESS;
        assert!(denied(none, true).contains("MemFlags(HOST_NO_ACCESS)"));
        assert!(denied(none, false).contains("MemFlags(HOST_NO_ACCESS)"));
    }
}
