//! [`Kernel`]: a kernel with its arguments, and [`KernelArg`], what can be passed to it.

use std::any::Any;
use std::cell::Cell;
use std::ffi::{c_void, CString};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cl_raw::{kernel as raw, mem as raw_mem, queue as raw_queue, sys, Version};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::event::{raw_list, Event};
use crate::pod::{bytes_of, Pod};
use crate::program::Program;
use crate::queue::Queue;

/// How a [`KernelArg`] is passed to `clSetKernelArg` / `clSetKernelArgSVMPointer`.
pub enum ArgValue<'a> {
    /// A by-value argument: these bytes (a scalar, vector or struct of the kernel's type).
    Bytes(&'a [u8]),
    /// A `__local` buffer of this many bytes.
    Local(usize),
    /// A memory object (buffer, image, pipe); the kernel retains it until the argument changes or
    /// the kernel is dropped.
    Mem(sys::cl_mem),
    /// A memory object whose storage belongs to something else (a buffer view of an SVM
    /// allocation): passed as [`ArgValue::Mem`], and the kernel also holds `keep_alive` while the
    /// argument is set (and reports each enqueue to it, see [`crate::svm`]).
    MemKeepAlive {
        /// The memory object.
        mem: sys::cl_mem,
        /// Whatever owns the storage.
        keep_alive: Arc<dyn Any + Send + Sync>,
    },
    /// A sampler (`sampler_t`); the kernel retains it until the argument changes or the kernel
    /// is dropped.
    Sampler(sys::cl_sampler),
    /// A null memory object (`__global T* p = NULL`).
    NullMem,
    /// An SVM pointer (OpenCL 2.0), possibly into the middle of an allocation; `keep_alive`, when
    /// given, is held by the kernel as long as the argument is set.
    Svm {
        /// The pointer.
        ptr: *const c_void,
        /// Whatever keeps the allocation alive.
        keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    },
}

impl fmt::Debug for ArgValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgValue::Bytes(b) => f.debug_tuple("Bytes").field(&b.len()).finish(),
            ArgValue::Local(n) => f.debug_tuple("Local").field(n).finish(),
            ArgValue::Mem(m) => f.debug_tuple("Mem").field(m).finish(),
            ArgValue::MemKeepAlive { mem, .. } => {
                f.debug_struct("MemKeepAlive").field("mem", mem).finish()
            }
            ArgValue::Sampler(s) => f.debug_tuple("Sampler").field(s).finish(),
            ArgValue::NullMem => f.write_str("NullMem"),
            ArgValue::Svm { ptr, .. } => f.debug_struct("Svm").field("ptr", ptr).finish(),
        }
    }
}

/// Something that can be a kernel argument: [`Pod`] scalars (by value), [`crate::Buffer`] and
/// other memory objects, [`LocalMemory`], SVM allocations.
///
/// # Safety
///
/// 1. [`ArgValue::Mem`] carries a valid memory object handle, alive while `self` is.
/// 2. [`ArgValue::Svm`] carries a pointer into a live SVM allocation of the kernel's context
///    that stays allocated while the kernel holds `keep_alive` (or, without one, until every
///    enqueue that uses it completed).
/// 3. [`ArgValue::Sampler`] carries a valid sampler handle, alive while `self` is.
pub unsafe trait KernelArg {
    /// How to pass the argument.
    fn arg_value(&self) -> ArgValue<'_>;
}

// SAFETY: `Bytes` carries no handle.
unsafe impl<T: Pod> KernelArg for T {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Bytes(bytes_of(self))
    }
}

/// A `__local` memory argument of a given size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalMemory {
    bytes: usize,
}

impl LocalMemory {
    /// `bytes` bytes of local memory (must be positive; checked when set).
    pub fn new(bytes: usize) -> LocalMemory {
        LocalMemory { bytes }
    }

    /// Room for `len` values of `T`.
    pub fn of<T>(len: usize) -> LocalMemory {
        LocalMemory {
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
        }
    }

    /// The size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

// SAFETY: `Local` carries no handle.
unsafe impl KernelArg for LocalMemory {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Local(self.bytes)
    }
}

/// A null memory-object argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NullMem;

// SAFETY: `NullMem` carries no handle.
unsafe impl KernelArg for NullMem {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::NullMem
    }
}

/// What the kernel holds for a set argument.
enum Held {
    Set,
    Mem(sys::cl_mem, Option<Arc<dyn Any + Send + Sync>>),
    Svm(Option<Arc<dyn Any + Send + Sync>>),
    Sampler(sys::cl_sampler),
}

impl Held {
    /// What keeps an argument's storage alive (SVM), told about each enqueue.
    fn keep_alive(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        match self {
            Held::Mem(_, k) | Held::Svm(k) => k.as_ref(),
            Held::Set | Held::Sampler(_) => None,
        }
    }
}

/// A kernel of a built program.
///
/// `Send` but not `Sync`, and not `Clone`: the spec exempts `clSetKernelArg` (and the SVM/exec-info
/// setters) from thread safety for one kernel object, so exclusive ownership is what makes
/// [`Kernel::set_arg`] sound. Use [`Kernel::duplicate`] for a second, independent kernel object.
///
/// Memory-object arguments are retained by the kernel until replaced or until the kernel is
/// dropped, so a buffer dropped between `set_arg` and an enqueue cannot dangle (enqueued commands
/// keep their objects alive themselves, by the spec).
pub struct Kernel {
    raw: sys::cl_kernel,
    name: String,
    program: Program,
    held: Vec<Option<Held>>,
    /// Explicitly `!Sync` (`Cell` is `Send` but not `Sync`), independent of the field types.
    not_sync: PhantomData<Cell<()>>,
}

// SAFETY: every OpenCL call on a kernel is thread-safe except clSetKernelArg,
// clSetKernelArgSVMPointer, clSetKernelExecInfo and clCloneKernel on the same kernel (OpenCL 3.0
// spec, "Multiple Host Threads"); `Kernel` is not `Clone` and not `Sync`, so those calls, made
// through `&mut self`, are never concurrent. Moving the sole owner to another thread is fine.
unsafe impl Send for Kernel {}

impl Kernel {
    /// The kernel `name` of a built program.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name with a NUL byte (checked first); [`Error::Cl`] from
    /// `clCreateKernel` (`CL_INVALID_KERNEL_NAME`, `CL_INVALID_PROGRAM_EXECUTABLE` if unbuilt).
    pub fn new(program: &Program, name: &str) -> Result<Kernel> {
        let cname = CString::new(name)
            .map_err(|_| Error::InvalidArgument("kernel name contains a NUL byte".into()))?;
        // SAFETY: a valid program; we own the returned kernel.
        let raw = unsafe { raw::create(program.as_raw(), &cname) }
            .map_err(Error::cl("clCreateKernel"))?;
        let mut k = Kernel {
            raw,
            name: name.to_owned(),
            program: program.clone(),
            held: Vec::new(),
            not_sync: PhantomData,
        };
        let n = k.num_args()?;
        k.held = (0..n).map(|_| None).collect();
        Ok(k)
    }

    /// A new kernel object for the same function, with no arguments set (works on every version;
    /// `clCloneKernel` needs 2.1 and copies the arguments).
    ///
    /// # Errors
    ///
    /// As [`Kernel::new`].
    pub fn duplicate(&self) -> Result<Kernel> {
        Kernel::new(&self.program, &self.name)
    }

    /// The kernel's function name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The program it came from.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The kernel's context.
    pub fn context(&self) -> &Context {
        self.program.context()
    }

    /// The raw handle (still owned by `self`).
    pub fn as_raw(&self) -> sys::cl_kernel {
        self.raw
    }

    /// `CL_KERNEL_NUM_ARGS`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelInfo`.
    pub fn num_args(&self) -> Result<u32> {
        // SAFETY: a valid kernel; a 1.0 parameter.
        unsafe { raw::get_info(self.raw, sys::CL_KERNEL_NUM_ARGS) }
            .map_err(Error::cl("clGetKernelInfo"))
    }

    /// `CL_KERNEL_WORK_GROUP_SIZE` for `queue`'s device.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelWorkGroupInfo`.
    pub fn work_group_size(&self, queue: &Queue) -> Result<usize> {
        // SAFETY: a valid kernel and device; a 1.0 parameter.
        unsafe {
            raw::get_work_group_info(
                self.raw,
                queue.device().as_raw(),
                sys::CL_KERNEL_WORK_GROUP_SIZE,
            )
        }
        .map_err(Error::cl("clGetKernelWorkGroupInfo"))
    }

    /// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` for `queue`'s device.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelWorkGroupInfo`.
    pub fn preferred_work_group_size_multiple(&self, queue: &Queue) -> Result<usize> {
        // SAFETY: a valid kernel and device; a 1.1 parameter.
        unsafe {
            raw::get_work_group_info(
                self.raw,
                queue.device().as_raw(),
                sys::CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
            )
        }
        .map_err(Error::cl("clGetKernelWorkGroupInfo"))
    }

    fn slot(&self, index: u32) -> Result<usize> {
        let i = index as usize;
        if i < self.held.len() {
            Ok(i)
        } else {
            Err(Error::InvalidArgument(format!(
                "argument index {index} out of range: kernel '{}' has {} arguments",
                self.name,
                self.held.len()
            )))
        }
    }

    /// Sets argument `index`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an index past the last argument, a zero-size local buffer,
    /// or an empty by-value argument (checked first); [`Error::Unsupported`] for SVM pointers on
    /// platforms older than 2.0; [`Error::Cl`] from `clSetKernelArg` /
    /// `clSetKernelArgSVMPointer` (`CL_INVALID_ARG_SIZE` when the size does not match the
    /// kernel's declaration, ...).
    pub fn set_arg<A: KernelArg + ?Sized>(&mut self, index: u32, arg: &A) -> Result<&mut Kernel> {
        let slot = self.slot(index)?;
        let held = match arg.arg_value() {
            ArgValue::Bytes(b) => {
                if b.is_empty() {
                    return Err(Error::InvalidArgument(
                        "a by-value kernel argument cannot be empty".into(),
                    ));
                }
                // SAFETY: exclusive access to the kernel (`&mut self`); `b` is readable.
                unsafe { raw::set_arg(self.raw, index, b.len(), b.as_ptr().cast()) }
                    .map_err(Error::cl("clSetKernelArg"))?;
                Held::Set
            }
            ArgValue::Local(bytes) => {
                if bytes == 0 {
                    return Err(Error::InvalidArgument(
                        "a local-memory argument needs a positive size".into(),
                    ));
                }
                // SAFETY: exclusive access; a null value with a size declares local memory.
                unsafe { raw::set_arg(self.raw, index, bytes, std::ptr::null()) }
                    .map_err(Error::cl("clSetKernelArg"))?;
                Held::Set
            }
            ArgValue::Mem(mem) => self.set_mem_arg(index, mem, None)?,
            ArgValue::MemKeepAlive { mem, keep_alive } => {
                self.set_mem_arg(index, mem, Some(keep_alive))?
            }
            ArgValue::NullMem => {
                let null: sys::cl_mem = std::ptr::null_mut();
                // SAFETY: exclusive access; a null `cl_mem` value is allowed for buffer arguments.
                unsafe {
                    raw::set_arg(
                        self.raw,
                        index,
                        std::mem::size_of::<sys::cl_mem>(),
                        (&null as *const sys::cl_mem).cast(),
                    )
                }
                .map_err(Error::cl("clSetKernelArg"))?;
                Held::Set
            }
            ArgValue::Svm { ptr, keep_alive } => {
                self.context()
                    .require_platform_version(Version::V2_0, "clSetKernelArgSVMPointer")?;
                // SAFETY: exclusive access; a 2.0 platform; `ptr` is a live SVM pointer of this
                // context (KernelArg contract).
                unsafe { raw::set_arg_svm_pointer(self.raw, index, ptr) }
                    .map_err(Error::cl("clSetKernelArgSVMPointer"))?;
                Held::Svm(keep_alive)
            }
            ArgValue::Sampler(sampler) => {
                // SAFETY: exclusive access; `sampler` is valid (KernelArg contract) and read as a
                // `cl_sampler` value.
                unsafe {
                    raw::set_arg(
                        self.raw,
                        index,
                        std::mem::size_of::<sys::cl_sampler>(),
                        (&sampler as *const sys::cl_sampler).cast(),
                    )
                }
                .map_err(Error::cl("clSetKernelArg"))?;
                // SAFETY: `sampler` is valid (KernelArg contract); the reference is released when
                // the slot changes or the kernel drops.
                unsafe { cl_raw::sampler::retain(sampler) }
                    .map_err(Error::cl("clRetainSampler"))?;
                Held::Sampler(sampler)
            }
        };
        match self.held[slot].replace(held) {
            Some(Held::Mem(old, _)) => crate::memory::release_in_drop(old),
            Some(Held::Sampler(old)) => crate::sampler::release_in_drop(old),
            _ => {}
        }
        Ok(self)
    }

    /// Sets a memory-object argument and retains the object.
    fn set_mem_arg(
        &mut self,
        index: u32,
        mem: sys::cl_mem,
        keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Result<Held> {
        // SAFETY: exclusive access; `mem` is valid (KernelArg contract) and read as a `cl_mem`
        // value.
        unsafe {
            raw::set_arg(
                self.raw,
                index,
                std::mem::size_of::<sys::cl_mem>(),
                (&mem as *const sys::cl_mem).cast(),
            )
        }
        .map_err(Error::cl("clSetKernelArg"))?;
        // SAFETY: `mem` is valid (KernelArg contract); the reference is released when the slot
        // changes or the kernel drops.
        unsafe { raw_mem::retain(mem) }.map_err(Error::cl("clRetainMemObject"))?;
        Ok(Held::Mem(mem, keep_alive))
    }

    /// Sets argument `index` to an SVM pointer without anything keeping it alive.
    ///
    /// # Errors
    ///
    /// As [`Kernel::set_arg`].
    ///
    /// # Safety
    ///
    /// 1. `ptr` points into an SVM allocation of the kernel's context that stays allocated until
    ///    every enqueue of this kernel made while the argument is set has completed.
    pub unsafe fn set_arg_svm_pointer(
        &mut self,
        index: u32,
        ptr: *const c_void,
    ) -> Result<&mut Kernel> {
        struct Raw(*const c_void);
        // SAFETY: obligation 1 is the trait's obligation 2.
        unsafe impl KernelArg for Raw {
            fn arg_value(&self) -> ArgValue<'_> {
                ArgValue::Svm {
                    ptr: self.0,
                    keep_alive: None,
                }
            }
        }
        self.set_arg(index, &Raw(ptr))
    }

    /// Enqueues the kernel over `global` work-items (1 to 3 dimensions), with an optional local
    /// size, after `wait`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for 0 or more than 3 dimensions, a local size of another
    /// dimension, or an argument that was never set (all checked first); [`Error::Cl`] from
    /// `clEnqueueNDRangeKernel`.
    pub fn enqueue_nd_range(
        &self,
        queue: &Queue,
        global: &[usize],
        local: Option<&[usize]>,
        wait: &[&Event],
    ) -> Result<Event> {
        if !(1..=3).contains(&global.len()) {
            return Err(Error::InvalidArgument(format!(
                "an ND-range has 1 to 3 dimensions, got {}",
                global.len()
            )));
        }
        if let Some(l) = local {
            if l.len() != global.len() {
                return Err(Error::InvalidArgument(format!(
                    "local size has {} dimensions, global size {}",
                    l.len(),
                    global.len()
                )));
            }
        }
        if let Some(i) = self.held.iter().position(Option::is_none) {
            return Err(Error::InvalidArgument(format!(
                "argument {i} of kernel '{}' is not set",
                self.name
            )));
        }
        // SAFETY: valid queue/kernel/events; every argument is set and its memory objects are
        // retained by `self`; we own the returned event.
        let ev = unsafe {
            raw_queue::enqueue_nd_range_kernel(
                queue.as_raw(),
                self.raw,
                None,
                global,
                local,
                &raw_list(wait),
            )
        }
        .map_err(Error::cl("clEnqueueNDRangeKernel"))?;
        // SAFETY: a fresh reference we own.
        let ev = unsafe { Event::from_raw(ev) };
        // SVM has no reference count: an allocation must learn every queue that uses it so its
        // free can wait for them (crate::svm).
        for keep_alive in self.held.iter().flatten().filter_map(Held::keep_alive) {
            crate::svm::note_kernel_use(keep_alive, queue);
        }
        Ok(ev)
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: we own one reference to a valid kernel.
        if let Err(e) = unsafe { raw::release(self.raw) } {
            tracing::warn!(status = %e, "clReleaseKernel failed in drop");
        }
        for held in self.held.drain(..).flatten() {
            match held {
                Held::Mem(m, _) => crate::memory::release_in_drop(m),
                Held::Sampler(s) => crate::sampler::release_in_drop(s),
                _ => {}
            }
        }
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("raw", &self.raw)
            .field("name", &self.name)
            .finish()
    }
}
