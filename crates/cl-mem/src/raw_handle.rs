//! [`RawHandle`]: the raw-handle vocabulary (`as_raw`, `into_raw`, `from_raw`,
//! `from_raw_retained`, `release`, `reference_count`), written once for every owning wrapper.
//! Also the wrappers' shared boilerplate: [`release_in_drop`] and [`retain_for_clone`] (their
//! `Drop` and `Clone`, [`drop_releases!`] and [`clone_retains!`]), [`eq_by_handle!`] (equality
//! and hashing by handle) and [`debug_fields!`].

use cl_raw::object::{self, Object};

use crate::error::{Error, Result};

/// An owning wrapper of one reference to an OpenCL object, and its raw handle (PyOpenCL's
/// `int_ptr` / `from_int_ptr`): [`Buffer`](crate::Buffer), [`Image`](crate::Image),
/// [`Memory`](crate::Memory), [`Pipe`](crate::Pipe), [`Sampler`](crate::Sampler),
/// [`Context`](crate::Context), [`Queue`](crate::Queue), [`Program`](crate::Program),
/// [`Kernel`](crate::Kernel), [`Event`](crate::Event).
///
/// `as_raw`, `into_raw` and `from_raw` are each type's own (what a wrapper reads from the handle,
/// and what it gives up with it, differ); `from_raw_retained`, `release` and `reference_count` are
/// written once here. Not here: [`Platform`](crate::Platform) and [`Device`](crate::Device), `Copy`
/// ids that own no reference (they have `from_raw` and `as_raw` of their own), the SVM
/// pointer of [`SvmArray`](crate::svm::SvmArray) and the borrowed buffer of an SVM view.
///
/// # Safety
///
/// `release` and `reference_count` are written here over the implementor's handles, so an
/// implementation promises that `as_raw` returns a valid handle of the kind `object()` names for
/// as long as `self` lives, and that `into_raw` (and `into_raw_for_release`) hand over one
/// reference `self` owned, which nothing else releases. A safe trait would let safe code release
/// a reference it does not own.
pub unsafe trait RawHandle {
    /// The `cl-sys` handle (`sys::cl_mem`, `sys::cl_event`, ...).
    type Raw: Copy + Into<*mut std::ffi::c_void>;

    /// Which retain, release and info calls the handle takes.
    #[doc(hidden)]
    fn object() -> Object
    where
        Self: Sized;

    /// The raw handle, still owned by `self` (PyOpenCL's `int_ptr`).
    fn as_raw(&self) -> Self::Raw;

    /// Gives the reference away without releasing it; the caller owns it now.
    fn into_raw(self) -> Self::Raw
    where
        Self: Sized;

    /// Gives the handle up without releasing it and without the bookkeeping of a handle given
    /// away (see [`Memory`](crate::Memory)'s and [`Buffer`](crate::Buffer)'s `into_raw`), for
    /// [`RawHandle::release`].
    #[doc(hidden)]
    fn into_raw_for_release(self) -> Self::Raw
    where
        Self: Sized,
    {
        self.into_raw()
    }

    /// Adopts one reference to a raw handle (no retain): `from_int_ptr(ptr, retain=False)`. Each
    /// type reads what it needs from the handle (its size, context, devices, ...).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the type's queries, [`Error::InvalidArgument`] when the object is not
    /// of the type; the reference is released then. Infallible for [`Event`](crate::Event),
    /// [`Sampler`](crate::Sampler) and [`Memory`](crate::Memory).
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid object of the type and the caller gives its reference to the new
    ///    wrapper.
    /// 2. The type's own obligations, listed on its implementation (what backs a buffer stays
    ///    valid, a kernel's arguments are set only through the wrapper, ...).
    unsafe fn from_raw(raw: Self::Raw) -> Result<Self>
    where
        Self: Sized;

    /// Retains a raw handle and wraps the new reference: `from_int_ptr(ptr, retain=True)`.
    ///
    /// # Errors
    ///
    /// As [`RawHandle::from_raw`], plus [`Error::Cl`] from `clRetain*`.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid object of the type.
    /// 2. As obligation 2 of [`RawHandle::from_raw`].
    unsafe fn from_raw_retained(raw: Self::Raw) -> Result<Self>
    where
        Self: Sized,
    {
        // SAFETY: obligation 1.
        unsafe { object::retain(Self::object(), raw.into()) }
            .map_err(Error::cl(names(Self::object()).0))?;
        // SAFETY: we own the reference just taken; obligation 2 is the caller's.
        unsafe { Self::from_raw(raw) }
    }

    /// Releases the reference now, reporting failure (`Drop` only logs it). Consuming `self`
    /// makes a double release impossible by construction (PyOpenCL checks it at run time).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clRelease*`.
    fn release(self) -> Result<()>
    where
        Self: Sized,
    {
        let raw = self.into_raw_for_release();
        // SAFETY: we owned this reference.
        unsafe { object::release(Self::object(), raw.into()) }
            .map_err(Error::cl(names(Self::object()).1))
    }

    /// `CL_*_REFERENCE_COUNT` (for tests and leak hunting; racy by nature).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGet*Info`.
    fn reference_count(&self) -> Result<u32>
    where
        Self: Sized,
    {
        // SAFETY: a valid handle while `self` lives; a 1.0 parameter of its kind.
        unsafe {
            get_info(
                Self::object(),
                self.as_raw().into(),
                names(Self::object()).3,
            )
        }
    }
}

/// The items of a [`RawHandle`] implementation that only name the handle kept in field `raw`:
/// `Raw`, `object()` (`Object::$kind`) and `as_raw`. Written inside the `unsafe impl`, which
/// keeps its safety comment and writes `from_raw` and `into_raw` itself.
macro_rules! raw_handle_field {
    ($kind:ident: $raw:ty) => {
        type Raw = $raw;

        fn object() -> cl_raw::object::Object {
            cl_raw::object::Object::$kind
        }

        #[inline]
        fn as_raw(&self) -> $raw {
            self.raw
        }
    };
}
pub(crate) use raw_handle_field;

/// `clGet*Info` of a handle of kind `object`, decoded as `T`, failure named after the call
/// (`clGetProgramInfo`, ...).
///
/// # Safety
///
/// As [`object::get_info`]: `raw` is a valid handle of kind `object` and `param` a parameter
/// its platform version knows.
#[inline]
pub(crate) unsafe fn get_info<T: cl_raw::InfoValue>(
    object: Object,
    raw: *mut std::ffi::c_void,
    param: u32,
) -> Result<T> {
    // SAFETY: the caller's obligations.
    unsafe { object::get_info(object, raw, param) }.map_err(Error::cl(names(object).2))
}

/// The object a handle of kind `object` reports for `param` (its context, a kernel's program),
/// as a new owning wrapper holding a reference of its own.
///
/// # Safety
///
/// As [`get_info`]; `param`'s value is a live object of `P`'s kind (the driver keeps an object's
/// context, and a kernel's program, alive while the object lives) and meets `P::from_raw`'s
/// other obligations.
pub(crate) unsafe fn get_info_retained<P: RawHandle>(
    object: Object,
    raw: *mut std::ffi::c_void,
    param: u32,
) -> Result<P>
where
    P::Raw: cl_raw::InfoValue,
{
    // SAFETY: the caller's obligations.
    let parent: P::Raw = unsafe { get_info(object, raw, param) }?;
    // SAFETY: a live object of `P`'s kind (the caller's obligation); the wrapper retains it.
    unsafe { P::from_raw_retained(parent) }
}

/// `into_raw` for wrappers that own more than the reference (a context reference, a staging
/// cache, pending kernel arguments): one reference more for the caller, then `this` drops
/// normally, where forgetting it would leak what its fields and its `Drop` free.
///
/// If the driver refuses the retain, `this` is forgotten instead: the caller then gets `this`'s
/// own reference (its other fields leak, logged), never a handle that `Drop` released.
pub(crate) fn retain_then_drop<T: RawHandle>(this: T) -> T::Raw {
    let raw = this.as_raw();
    // SAFETY: `this` holds a valid handle of kind `T::object()`.
    match unsafe { object::retain(T::object(), raw.into()) } {
        Ok(()) => drop(this),
        Err(e) => {
            tracing::error!(status = %e, "{} failed in into_raw; the wrapper leaks", names(T::object()).0);
            std::mem::forget(this);
        }
    }
    raw
}

/// Releases one reference from a `Drop` (or an error path that gives a handle up), logging
/// failure: a destructor cannot report it. Every owning wrapper's `Drop` is this one call.
#[inline]
pub(crate) fn release_in_drop(object: Object, raw: *mut std::ffi::c_void) {
    // SAFETY: callers own one reference to `raw`, a valid handle of kind `object`, and give it up.
    if let Err(e) = unsafe { object::release(object, raw) } {
        crate::error::drop_status(names(object).1, e);
    }
}

/// What `from_raw` shares in wrappers that read their fields from the handle: `read` builds the
/// wrapper, and when it fails the reference the caller gave is released (failure logged as in
/// `Drop`: the error returned is `read`'s).
///
/// # Safety
///
/// The caller owns one reference to `raw`, a valid handle of kind `object`, and gives it up on
/// error.
pub(crate) unsafe fn adopt_or_release<T>(
    object: Object,
    raw: *mut std::ffi::c_void,
    read: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let adopted = read();
    if adopted.is_err() {
        release_in_drop(object, raw);
    }
    adopted
}

/// Retains one more reference for a `Clone`, logging failure: a retain failing on a valid
/// handle means a broken driver, and `Clone` cannot report it.
#[inline]
pub(crate) fn retain_for_clone(object: Object, raw: *mut std::ffi::c_void) {
    // SAFETY: callers hold a valid handle of kind `object`.
    if let Err(e) = unsafe { object::retain(object, raw) } {
        tracing::error!(status = %e, "{} failed", names(object).0);
    }
}

/// `Drop` for wrappers owning one reference to an object of kind `Object::$kind` in field `raw`:
/// [`release_in_drop`].
macro_rules! drop_releases {
    ($kind:ident: $($ty:ty),+) => {$(
        impl Drop for $ty {
            fn drop(&mut self) {
                $crate::raw_handle::release_in_drop(cl_raw::object::Object::$kind, self.raw);
            }
        }
    )+};
}
pub(crate) use drop_releases;

/// `Clone` for wrappers owning one reference to an object of kind `Object::$kind` in field `raw`:
/// [`retain_for_clone`], then every other field cloned. The fields are all named (the struct
/// literal makes the compiler check the list is whole); a live-count token's `Clone` counts the
/// new wrapper.
macro_rules! clone_retains {
    ($kind:ident: $ty:ident { $($field:ident),* }) => {
        impl Clone for $ty {
            fn clone(&self) -> $ty {
                $crate::raw_handle::retain_for_clone(cl_raw::object::Object::$kind, self.raw);
                $ty {
                    raw: self.raw,
                    $($field: Clone::clone(&self.$field),)*
                }
            }
        }
    };
}
pub(crate) use clone_retains;

/// `Debug` as `Type { field: value, .. }` over the named fields, in order; a last `..` ends it
/// with `finish_non_exhaustive` (for fields left out). A generic type names its one type
/// parameter with its one bound (`PinnedMemory<T: Pod>: ptr, len`); no `T: Debug` bound is added,
/// so the fields named must be `Debug` for every `T`.
macro_rules! debug_fields {
    ($ty:ident $(<$lt:lifetime>)?: $($field:ident),+, ..) => {
        $crate::raw_handle::debug_fields!(
            @impl finish_non_exhaustive [] $ty [$($lt)?]: $($field),+
        );
    };
    ($ty:ident $(<$lt:lifetime>)?: $($field:ident),+) => {
        $crate::raw_handle::debug_fields!(@impl finish [] $ty [$($lt)?]: $($field),+);
    };
    ($ty:ident<$p:ident: $bound:path>: $($field:ident),+) => {
        $crate::raw_handle::debug_fields!(@impl finish [$p: $bound] $ty [$p]: $($field),+);
    };
    (@impl $finish:ident [$($g:tt)*] $ty:ident [$($a:tt)*]: $($field:ident),+) => {
        impl<$($g)*> std::fmt::Debug for $ty<$($a)*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &self.$field))+
                    .$finish()
            }
        }
    };
}
pub(crate) use debug_fields;

/// `PartialEq` and `Eq` (and `Hash`, after `hash`) by a wrapper's handle field: two wrappers are
/// equal when they hold the same OpenCL object (PyOpenCL compares `int_ptr`).
macro_rules! eq_by_handle {
    ($field:ident: $($ty:ty),+) => {$(
        impl PartialEq for $ty {
            fn eq(&self, other: &$ty) -> bool {
                self.$field == other.$field
            }
        }
        impl Eq for $ty {}
    )+};
    (hash $field:ident: $($ty:ty),+) => {
        $crate::raw_handle::eq_by_handle!($field: $($ty),+);
        $(impl std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                std::hash::Hash::hash(&self.$field, state);
            }
        })+
    };
}
pub(crate) use eq_by_handle;

/// The C names of the retain, release and info calls of `object`, and its reference-count
/// parameter.
const fn names(object: Object) -> (&'static str, &'static str, &'static str, u32) {
    use cl_raw::sys;
    match object {
        Object::Mem => (
            "clRetainMemObject",
            "clReleaseMemObject",
            "clGetMemObjectInfo",
            sys::CL_MEM_REFERENCE_COUNT,
        ),
        Object::Context => (
            "clRetainContext",
            "clReleaseContext",
            "clGetContextInfo",
            sys::CL_CONTEXT_REFERENCE_COUNT,
        ),
        Object::Queue => (
            "clRetainCommandQueue",
            "clReleaseCommandQueue",
            "clGetCommandQueueInfo",
            sys::CL_QUEUE_REFERENCE_COUNT,
        ),
        Object::Event => (
            "clRetainEvent",
            "clReleaseEvent",
            "clGetEventInfo",
            sys::CL_EVENT_REFERENCE_COUNT,
        ),
        Object::Program => (
            "clRetainProgram",
            "clReleaseProgram",
            "clGetProgramInfo",
            sys::CL_PROGRAM_REFERENCE_COUNT,
        ),
        Object::Kernel => (
            "clRetainKernel",
            "clReleaseKernel",
            "clGetKernelInfo",
            sys::CL_KERNEL_REFERENCE_COUNT,
        ),
        Object::Sampler => (
            "clRetainSampler",
            "clReleaseSampler",
            "clGetSamplerInfo",
            sys::CL_SAMPLER_REFERENCE_COUNT,
        ),
    }
}
