//! [`Kernel`]: a kernel with its arguments, and [`KernelArg`], what can be passed to it.

use std::collections::VecDeque;
use std::ffi::{c_void, CString};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cl_raw::object::{self, Object};
use cl_raw::{kernel as raw, queue as raw_queue, sys, ClError, InfoValue, Version};

use crate::error::{Error, Result};
use crate::mem_type::MemObjectType;
use crate::pod::{bytes_of, Pod};
use crate::raw_handle::{
    adopt_or_release, debug_fields, get_info, get_info_retained, release_in_drop, RawHandle,
};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::event::Event;
use crate::runtime::program::Program;
use crate::runtime::queue::Queue;
use crate::runtime::track::{enqueue_tracked, is_done, Access, ArgHold, ArgMemory, Tracked, Use};
use smallvec::SmallVec;

/// How a [`KernelArg`] is passed to `clSetKernelArg` / `clSetKernelArgSVMPointer`.
pub enum ArgValue<'a> {
    /// A by-value argument: these bytes (a scalar, vector or struct of the kernel's type).
    Bytes(&'a [u8]),
    /// A `__local` buffer of this many bytes.
    Local(usize),
    /// A memory object (buffer, image, pipe); the kernel retains it until the argument changes or
    /// the kernel is dropped.
    Mem(sys::cl_mem),
    /// A memory object the kernel also holds `keep_alive` for while the argument is set: a
    /// buffer's or image's command record, the SVM allocation behind a buffer view of it (told
    /// each enqueue, see [`crate::svm`]), or whatever else owns the storage.
    MemKeepAlive {
        /// The memory object.
        mem: sys::cl_mem,
        /// What owns the storage or records its commands.
        keep_alive: KeepAlive,
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
        keep_alive: Option<KeepAlive>,
    },
}

/// What a kernel holds while an argument is set ([`ArgValue::MemKeepAlive`], [`ArgValue::Svm`]).
/// This crate's memory types make their own, through which the kernel reaches their command
/// records; an argument type of yours keeps anything alive with `KeepAlive::from(Arc::new(x))`.
pub struct KeepAlive(Kept);

/// What a [`KeepAlive`] holds: the memory kinds kernels really keep, as values (a match, not a
/// downcast, finds the memory behind an argument).
enum Kept {
    /// A buffer's or image's view of its command record.
    Tracked(ArgHold),
    /// Memory with its own rules, reached through the seam (an SVM allocation).
    Memory(Arc<dyn ArgMemory + Send + Sync>),
    /// A caller's owner of the storage: held, never looked into.
    Owner(#[expect(dead_code, reason = "held for its drop, never read")] Arc<dyn Send + Sync>),
}

impl KeepAlive {
    /// Keeps `tracked`'s record: the kernel orders its commands through it and counts its slot
    /// as a handle of the allocation.
    pub(crate) fn tracked(tracked: &Tracked) -> KeepAlive {
        KeepAlive(Kept::Tracked(ArgHold::new(tracked)))
    }

    /// Keeps `memory` (an SVM allocation), told about the kernel's slots and enqueues.
    pub(crate) fn memory(memory: Arc<dyn ArgMemory + Send + Sync>) -> KeepAlive {
        KeepAlive(Kept::Memory(memory))
    }

    /// The memory behind it, when this crate made it.
    pub(crate) fn arg_memory(&self) -> Option<&dyn ArgMemory> {
        match &self.0 {
            Kept::Tracked(t) => Some(t),
            Kept::Memory(m) => Some(&**m),
            Kept::Owner(_) => None,
        }
    }
}

impl<T: Send + Sync + 'static> From<Arc<T>> for KeepAlive {
    fn from(owner: Arc<T>) -> KeepAlive {
        KeepAlive(Kept::Owner(owner))
    }
}

impl fmt::Debug for KeepAlive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Kept::Tracked(_) => "KeepAlive(command record)",
            Kept::Memory(_) => "KeepAlive(memory)",
            Kept::Owner(_) => "KeepAlive(owner)",
        })
    }
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

/// What [`Kernel::set_arg`] takes: every [`KernelArg`], and types that stand for one (a pool's
/// block stands for its buffer). Implementing it is safe: it only hands out a reference to an
/// existing argument, whose [`KernelArg`] implementation keeps the promises.
///
/// ```ignore
/// impl AsKernelArg for MyTensor {
///     type Arg = cl_mem::Buffer;
///     fn as_kernel_arg(&self) -> &cl_mem::Buffer { &self.storage }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed as a kernel argument",
    label = "not a kernel argument",
    note = "pass a memory object by reference (`&Buffer`, a sub-buffer, `&Image`, `&Pipe`, a pool block `&PoolBlock<_>` / `&PooledSlice`, `&SvmArray<_, _>`), a `Pod` value (`f32`, `i32`, `u64`, `[f32; 4]`, your `#[repr(C)]` struct) by reference, `&LocalMemory::new(bytes)`, `&Sampler` or `&NullMem`",
    note = "`usize`/`isize` are not kernel scalars (the device's `size_t` may differ from the host's): use `u64`/`u32`",
    note = "a type of your own that holds one of these implements `AsKernelArg` by returning it"
)]
pub trait AsKernelArg {
    /// The argument this stands for.
    type Arg: KernelArg + ?Sized;

    /// The argument.
    fn as_kernel_arg(&self) -> &Self::Arg;
}

impl<T: KernelArg + ?Sized> AsKernelArg for T {
    type Arg = T;

    fn as_kernel_arg(&self) -> &T {
        self
    }
}

/// All of a kernel's arguments at once, for [`Kernel::call`]: a tuple of references to
/// [`AsKernelArg`] values, one per parameter in order (`(&a, &b, &0.5f32)`), up to 16; `()` for a
/// kernel without parameters.
pub trait KernelArgs {
    /// Each argument's value, in order. Read once per call: what is checked is what is set.
    fn values(&self) -> SmallVec<[ArgValue<'_>; 8]>;
}

impl KernelArgs for () {
    fn values(&self) -> SmallVec<[ArgValue<'_>; 8]> {
        SmallVec::new()
    }
}

macro_rules! kernel_args {
    ($($i:tt $t:ident),+) => {
        impl<$($t: AsKernelArg + ?Sized),+> KernelArgs for ($(&$t,)+) {
            fn values(&self) -> SmallVec<[ArgValue<'_>; 8]> {
                smallvec::smallvec![$(self.$i.as_kernel_arg().arg_value()),+]
            }
        }
    };
}

kernel_args!(0 A);
kernel_args!(0 A, 1 B);
kernel_args!(0 A, 1 B, 2 C);
kernel_args!(0 A, 1 B, 2 C, 3 D);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O);
kernel_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O, 15 P);

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

/// What the kernel holds for a set argument. Shared (`Arc`) between the kernel's current
/// arguments and the commands enqueued with them; the last owner releases the handle.
enum Held {
    Set,
    Mem(sys::cl_mem, Option<KeepAlive>),
    Svm(Option<KeepAlive>),
    Sampler(sys::cl_sampler),
}

// SAFETY: the handles are OpenCL objects, usable and releasable from any thread (OpenCL 3.0,
// "Multiple Host Threads"); the keep-alives are `Send + Sync`.
unsafe impl Send for Held {}
// SAFETY: as for `Send`; `Held` is never mutated through `&`.
unsafe impl Sync for Held {}

impl Held {
    /// What keeps an argument's storage alive (SVM), told about each enqueue.
    fn keep_alive(&self) -> Option<&KeepAlive> {
        match self {
            Held::Mem(_, k) | Held::Svm(k) => k.as_ref(),
            Held::Set | Held::Sampler(_) => None,
        }
    }

    /// True when something must outlive the commands that use it.
    fn holds_anything(&self) -> bool {
        !matches!(self, Held::Set)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        match self {
            // The held reference is ours to give up (taken in `set_value`).
            Held::Mem(m, _) => release_in_drop(Object::Mem, *m),
            Held::Sampler(s) => release_in_drop(Object::Sampler, *s),
            Held::Set | Held::Svm(_) => {}
        }
    }
}

/// The arguments one enqueued command used, kept until its event completes.
type Snapshot = Vec<Arc<Held>>;

/// Status reads are the expensive part of a record (a driver call, microseconds on the NVIDIA
/// driver). Out-of-order records are swept (every status read) only past this many entries, then
/// past twice what a sweep left: amortised O(1) reads per enqueue.
const FIRST_SWEEP: usize = 32;

/// True when both hold the same OpenCL object (or are the same argument).
fn same_object(a: &Arc<Held>, b: &Arc<Held>) -> bool {
    Arc::ptr_eq(a, b)
        || match (&**a, &**b) {
            (Held::Mem(x, _), Held::Mem(y, _)) => x == y,
            (Held::Sampler(x), Held::Sampler(y)) => x == y,
            _ => false,
        }
}

/// The arguments of one in-order queue's commands that may still run: the newest command's
/// event (on an in-order queue it completes last) and every object used since the record last
/// saw that queue idle, each once. Enqueues with the same argument objects read no status: only
/// the event is replaced. A replaced argument is let go at the next enqueue that brings a new
/// object after the queue went idle, or when the kernel drops.
struct OrderedHold {
    queue: usize,
    latest: Event,
    held: Snapshot,
}

/// Arguments held for commands that may still run.
#[derive(Default)]
struct InFlight {
    ordered: SmallVec<[OrderedHold; 1]>,
    /// Out-of-order queues: every command with its arguments, oldest first.
    unordered: VecDeque<(Event, Snapshot)>,
    next_sweep: usize,
}

impl InFlight {
    fn record(&mut self, queue: &Queue, ev: &Event, snapshot: Snapshot) {
        if snapshot.is_empty() {
            return;
        }
        let raw = queue.as_raw() as usize;
        if queue.is_in_order() {
            match self.ordered.iter_mut().find(|o| o.queue == raw) {
                Some(o) => {
                    let fresh: Snapshot = snapshot
                        .iter()
                        .filter(|h| !o.held.iter().any(|x| same_object(x, h)))
                        .cloned()
                        .collect();
                    // Only a new argument object costs a status read: when the previous newest
                    // command is done, what it covered (replaced arguments) can go now.
                    if !fresh.is_empty() && is_done(&o.latest) {
                        o.held = snapshot;
                    } else {
                        o.held.extend(fresh);
                    }
                    o.latest = ev.clone();
                }
                None => self.ordered.push(OrderedHold {
                    queue: raw,
                    latest: ev.clone(),
                    held: snapshot,
                }),
            }
        } else {
            if self.unordered.len() > self.next_sweep.max(FIRST_SWEEP) {
                self.unordered.retain(|(e, _)| !is_done(e));
                self.next_sweep = self.unordered.len().saturating_mul(2);
            }
            self.unordered.push_back((ev.clone(), snapshot));
        }
    }

    fn len(&self) -> usize {
        self.ordered.len() + self.unordered.len()
    }

    /// Every record as (event, arguments to keep until it completes).
    fn drain(&mut self) -> impl Iterator<Item = (Event, Snapshot)> + '_ {
        self.ordered
            .drain(..)
            .map(|o| (o.latest, o.held))
            .chain(self.unordered.drain(..))
    }
}

/// What a kernel parameter is, from `clGetKernelArgInfo` (programs are built with
/// `-cl-kernel-arg-info`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A `__global` pointer: a buffer, a buffer view of SVM, an SVM pointer or [`NullMem`].
    Global,
    /// A `__constant` pointer: as `Global`.
    Constant,
    /// A `__local` pointer: [`LocalMemory`].
    Local,
    /// An image of this type (`image2d_t` is [`MemObjectType::Image2d`], ...).
    Image(MemObjectType),
    /// A `sampler_t`.
    Sampler,
    /// A `pipe`.
    Pipe,
    /// A by-value argument (scalar, vector or struct): a [`Pod`].
    Value,
    /// A type this crate cannot pass (`queue_t`, `clk_event_t`, `reserve_id_t`).
    Unsupported,
}

impl ParamKind {
    fn describe(self) -> String {
        match self {
            ParamKind::Global => "a __global pointer (buffer, SVM or NullMem)".into(),
            ParamKind::Constant => "a __constant pointer (buffer, SVM or NullMem)".into(),
            ParamKind::Local => "a __local pointer (LocalMemory)".into(),
            ParamKind::Image(t) => format!("an image ({t:?})"),
            ParamKind::Sampler => "a sampler_t".into(),
            ParamKind::Pipe => "a pipe".into(),
            ParamKind::Value => "a by-value argument (a Pod)".into(),
            ParamKind::Unsupported => "an argument type this crate cannot pass".into(),
        }
    }
}

/// One kernel parameter as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelParam {
    /// `CL_KERNEL_ARG_NAME`.
    pub name: String,
    /// `CL_KERNEL_ARG_TYPE_NAME` (`"float*"`, `"image2d_t"`, `"uint"`).
    pub type_name: String,
    /// What may be passed.
    pub kind: ParamKind,
    /// The kernel cannot write through it: a `__constant` pointer or a `read_only` image (a
    /// `const __global` pointer is not: OpenCL C lets the kernel cast `const` away).
    pub read_only: bool,
    /// `CL_KERNEL_ARG_ACCESS_QUALIFIER` (images and pipes).
    access: sys::cl_kernel_arg_access_qualifier,
    /// The declared size in bytes of a by-value scalar or vector, or of a pipe's packet; `None`
    /// for other types (structs, typedefs), which the driver checks.
    size: Option<usize>,
}

impl KernelParam {
    /// `type name` as declared, for messages.
    fn declared(&self) -> String {
        if self.name.is_empty() {
            format!("`{}`", self.type_name)
        } else {
            format!("`{} {}`", self.type_name, self.name)
        }
    }
}

/// The address width of the context's devices in bytes, when they agree (the size of `size_t`).
fn address_bytes(context: &Context) -> Option<usize> {
    let mut bits = context
        .devices()
        .iter()
        .map(|d| d.info::<u32>(sys::CL_DEVICE_ADDRESS_BITS).ok());
    let first = bits.next()??;
    bits.all(|b| b == Some(first)).then_some(first as usize / 8)
}

/// What an enqueue on one device is checked against, read once per kernel and device.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// `CL_DEVICE_LOCAL_MEM_SIZE`: the most the `__local` arguments may take together.
    local_mem: u64,
    /// `CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE`: the most one `__constant` argument may take.
    constant_buffer: u64,
    /// `CL_KERNEL_WORK_GROUP_SIZE` of this kernel on the device.
    work_group: usize,
    /// `CL_DEVICE_MAX_WORK_ITEM_SIZES`.
    work_items: [usize; 3],
    /// Whether the local size may leave a partial group at the edge: a 2.x device, or a 3.0
    /// device reporting `CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT`, running a program built with
    /// `-cl-std=CL2.0` or later and without `-cl-uniform-work-group-size`.
    non_uniform: bool,
}

impl Limits {
    fn read(kernel: &Kernel, device: &crate::runtime::device::Device) -> Result<Limits> {
        let sizes = device.max_work_item_sizes()?;
        let mut work_items = [usize::MAX; 3];
        for (w, s) in work_items.iter_mut().zip(sizes) {
            *w = s;
        }
        let device_allows = device.version() >= Version::V2_0
            && (device.version() < Version::V3_0 || {
                let b: sys::cl_bool =
                    device.info(super::extra::CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT)?;
                b != 0
            });
        let non_uniform = device_allows && {
            // SAFETY: a valid program built for this device of its context; a 1.0 parameter.
            let options: String = unsafe {
                cl_raw::program::get_build_info(
                    kernel.program.as_raw(),
                    device.as_raw(),
                    sys::CL_PROGRAM_BUILD_OPTIONS,
                )
            }
            .map_err(Error::cl("clGetProgramBuildInfo"))?;
            let words: Vec<&str> = options.trim_end_matches('\0').split_whitespace().collect();
            !words.contains(&"-cl-uniform-work-group-size")
                && words.iter().any(|w| {
                    w.strip_prefix("-cl-std=CL")
                        .is_some_and(|v| v.starts_with('2') || v.starts_with('3'))
                })
        };
        // SAFETY: a valid kernel and a device of its context; a 1.0 parameter.
        let work_group: usize = unsafe {
            raw::get_work_group_info(kernel.raw, device.as_raw(), sys::CL_KERNEL_WORK_GROUP_SIZE)
        }
        .map_err(Error::cl("clGetKernelWorkGroupInfo"))?;
        Ok(Limits {
            local_mem: device.local_mem_size()?,
            constant_buffer: device.max_constant_buffer_size()?,
            work_group,
            work_items,
            non_uniform,
        })
    }
}

/// The size in bytes of an OpenCL C scalar or vector type (`float4` is 16, `int3` is 16, `uint`
/// is 4), `None` for any other type name. `size_t` and its kin take the device's address width.
fn type_size(type_name: &str, address_bytes: Option<usize>) -> Option<usize> {
    let t = type_name.trim();
    let unsigned = t.strip_prefix("unsigned ");
    let t = unsigned.unwrap_or(t);
    let base = t.trim_end_matches(|c: char| c.is_ascii_digit());
    let lanes: usize = match &t[base.len()..] {
        "" => 1,
        "2" => 2,
        "3" | "4" => 4,
        "8" => 8,
        "16" => 16,
        _ => return None,
    };
    let base = if unsigned.is_some() {
        match base {
            "char" | "short" | "int" | "long" => base,
            _ => return None,
        }
    } else {
        base
    };
    let elem = match base {
        "char" | "uchar" => 1,
        "short" | "ushort" | "half" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "double" => 8,
        "size_t" | "ptrdiff_t" | "intptr_t" | "uintptr_t" if lanes == 1 => address_bytes?,
        _ => return None,
    };
    Some(elem * lanes)
}

/// The image type named by a parameter type (`image2d_t` -> `Image2d`); `None` for other types.
fn image_type(type_name: &str) -> Option<MemObjectType> {
    let t = type_name
        .split_whitespace()
        .last()
        .unwrap_or("")
        .trim_end_matches('*');
    Some(match t {
        "image1d_t" => MemObjectType::Image1d,
        "image1d_buffer_t" => MemObjectType::Image1dBuffer,
        "image1d_array_t" => MemObjectType::Image1dArray,
        "image2d_t" | "image2d_depth_t" | "image2d_msaa_t" | "image2d_msaa_depth_t" => {
            MemObjectType::Image2d
        }
        "image2d_array_t"
        | "image2d_array_depth_t"
        | "image2d_array_msaa_t"
        | "image2d_array_msaa_depth_t" => MemObjectType::Image2dArray,
        "image3d_t" => MemObjectType::Image3d,
        _ => return None,
    })
}

/// Reads every parameter's description; `None` when the driver has none
/// (`CL_KERNEL_ARG_INFO_NOT_AVAILABLE`).
fn read_params(
    kernel: sys::cl_kernel,
    n: u32,
    address_bytes: Option<usize>,
) -> Result<Option<Vec<KernelParam>>> {
    let mut params = Vec::with_capacity(n as usize);
    for i in 0..n {
        // SAFETY: a valid kernel of a 1.2+ platform (the crate accepts no older one); `i` is
        // below CL_KERNEL_NUM_ARGS.
        let address: Result<sys::cl_kernel_arg_address_qualifier, ClError> =
            unsafe { raw::get_arg_info(kernel, i, sys::CL_KERNEL_ARG_ADDRESS_QUALIFIER) };
        let address = match address {
            Ok(a) => a,
            Err(ClError::KernelArgInfoNotAvailable) => return Ok(None),
            Err(e) => return Err(Error::cl("clGetKernelArgInfo")(e)),
        };
        // SAFETY: as above.
        let type_name: String =
            unsafe { raw::get_arg_info(kernel, i, sys::CL_KERNEL_ARG_TYPE_NAME) }
                .map_err(Error::cl("clGetKernelArgInfo"))?;
        // SAFETY: as above.
        // `cl_kernel_arg_type_qualifier` is a `cl_bitfield` (64 bits) in the spec's headers.
        let qualifier: u64 =
            unsafe { raw::get_arg_info(kernel, i, sys::CL_KERNEL_ARG_TYPE_QUALIFIER) }
                .map_err(Error::cl("clGetKernelArgInfo"))?;
        // SAFETY: as above.
        let name: String =
            unsafe { raw::get_arg_info(kernel, i, sys::CL_KERNEL_ARG_NAME) }.unwrap_or_default();
        let type_name = type_name.trim_end_matches('\0').to_owned();
        let last = type_name.split_whitespace().last().unwrap_or("").to_owned();
        // Images report CL_KERNEL_ARG_ADDRESS_GLOBAL (they live in global memory), so the type
        // decides first.
        let kind = match image_type(&type_name) {
            Some(t) => ParamKind::Image(t),
            None if qualifier & sys::CL_KERNEL_ARG_TYPE_PIPE != 0 => ParamKind::Pipe,
            None => match address {
                sys::CL_KERNEL_ARG_ADDRESS_GLOBAL => ParamKind::Global,
                sys::CL_KERNEL_ARG_ADDRESS_CONSTANT => ParamKind::Constant,
                sys::CL_KERNEL_ARG_ADDRESS_LOCAL => ParamKind::Local,
                _ if last == "sampler_t" => ParamKind::Sampler,
                _ if matches!(last.as_str(), "queue_t" | "clk_event_t" | "reserve_id_t") => {
                    ParamKind::Unsupported
                }
                // Some compilers report pointers to private memory this way; nothing can be
                // passed for them.
                _ if last.ends_with('*') => ParamKind::Unsupported,
                _ => ParamKind::Value,
            },
        };
        // SAFETY: as above.
        let access: sys::cl_kernel_arg_access_qualifier =
            unsafe { raw::get_arg_info(kernel, i, sys::CL_KERNEL_ARG_ACCESS_QUALIFIER) }
                .map_err(Error::cl("clGetKernelArgInfo"))?;
        // Only what the kernel cannot write through: a `const __global` pointer can be cast to a
        // writable one (the memory is not a const object), so it counts as a write.
        let read_only = match kind {
            ParamKind::Constant => true,
            ParamKind::Image(_) => access == sys::CL_KERNEL_ARG_ACCESS_READ_ONLY,
            _ => false,
        };
        let size = match kind {
            ParamKind::Value | ParamKind::Pipe => type_size(&type_name, address_bytes),
            _ => None,
        };
        params.push(KernelParam {
            name: name.trim_end_matches('\0').to_owned(),
            type_name,
            kind,
            read_only,
            access,
            size,
        });
    }
    Ok(Some(params))
}

/// A kernel of a built program.
///
/// `Send + Sync`, not `Clone`: the spec exempts `clSetKernelArg` (and the SVM/exec-info setters)
/// from thread safety for one kernel object, so [`Kernel::set_arg`] takes `&mut self`, and
/// [`Kernel::call`] (`&self`, for a kernel shared between threads) sets the arguments and enqueues
/// under the kernel's lock. For a second, independent kernel object ask the program again
/// (`kernel.program().kernel(kernel.name())`).
///
/// Every argument is checked against the parameter's declaration (`clGetKernelArgInfo`) when
/// set: a scalar for a pointer, image, sampler or pipe parameter, a memory object for a scalar,
/// a buffer for an image, or an object of another context is [`Error::KernelArg`] /
/// [`Error::InvalidArgument`], never a driver crash.
///
/// Memory objects, samplers and SVM allocations set as arguments are held by the kernel while
/// set, and by every enqueued command that used them until that command's event completes: a
/// kernel (or its arguments) dropped before a gated command runs leaves that command its
/// arguments.
pub struct Kernel {
    raw: sys::cl_kernel,
    name: String,
    program: Program,
    /// The number of arguments (`CL_KERNEL_NUM_ARGS`).
    n_args: usize,
    /// Parameter descriptions; `None` when the driver gives no argument information.
    params: Option<Vec<KernelParam>>,
    /// What setting arguments and enqueueing change, behind one lock.
    args: Mutex<Args>,
}

/// A kernel's arguments and what its enqueues keep. One lock, so that a kernel shared between
/// threads sets its arguments and enqueues as one step ([`Kernel::call`]): `clSetKernelArg` on one
/// kernel is the spec's one thread-safety exception.
#[derive(Default)]
struct Args {
    /// What each argument slot holds; `None` until set.
    held: Vec<Option<Arc<Held>>>,
    /// Per argument: the bytes of a `__local` argument or of a `__constant` argument's buffer
    /// (0 otherwise), checked against the queue's device at each enqueue.
    bytes: Vec<u64>,
    /// The device limits enqueues are checked against, read on the first enqueue on a device.
    limits: SmallVec<[(sys::cl_device_id, Limits); 1]>,
    /// The arguments of commands that may still run.
    in_flight: InFlight,
}

// SAFETY: every OpenCL call on a kernel is thread-safe except clSetKernelArg,
// clSetKernelArgSVMPointer, clSetKernelExecInfo and clCloneKernel on the same kernel (OpenCL 3.0
// spec, "Multiple Host Threads"). `Kernel` is not `Clone`, and it makes those calls only while
// holding its `args` lock (`set_arg` also has `&mut self`), so they are never concurrent; the held
// handles are released from any thread (see `Held`).
unsafe impl Send for Kernel {}
// SAFETY: as for `Send`: through `&Kernel`, arguments are set and enqueued only under the lock.
unsafe impl Sync for Kernel {}

impl Kernel {
    /// The kernel `name` of a built program.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name with a NUL byte (checked first); [`Error::Cl`] from
    /// `clCreateKernel` (`CL_INVALID_KERNEL_NAME`, `CL_INVALID_PROGRAM_EXECUTABLE` if unbuilt).
    pub(crate) fn new(program: &Program, name: &str) -> Result<Kernel> {
        let cname = CString::new(name)
            .map_err(|_| Error::InvalidArgument("kernel name contains a NUL byte".into()))?;
        // SAFETY: a valid program; we own the returned kernel.
        let raw = unsafe { raw::create(program.as_raw(), &cname) }.map_err(|e| match e {
            ClError::InvalidKernelName => Error::InvalidArgument(format!(
                "the program has no kernel named '{name}' (clCreateKernel: CL_INVALID_KERNEL_NAME)"
            )),
            e => Error::cl("clCreateKernel")(e),
        })?;
        let mut k = Kernel {
            raw,
            name: name.to_owned(),
            program: program.clone(),
            n_args: 0,
            params: None,
            args: Mutex::default(),
        };
        let n = k.num_args()?;
        k.n_args = n as usize;
        k.args = Mutex::new(Args::with_slots(n as usize));
        k.params = read_params(k.raw, n, address_bytes(program.context()))?;
        Ok(k)
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
    fn context(&self) -> &Context {
        self.program.context()
    }

    /// `CL_KERNEL_NUM_ARGS`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelInfo`.
    pub fn num_args(&self) -> Result<u32> {
        // SAFETY: a valid kernel; a 1.0 parameter.
        unsafe { get_info(Object::Kernel, self.raw, sys::CL_KERNEL_NUM_ARGS) }
    }

    /// A `clGetKernelWorkGroupInfo` parameter for `device`, decoded as `T`: PyOpenCL's
    /// `Kernel.get_work_group_info(param, device)` (`sys` being `cl_raw::sys`):
    ///
    /// | parameter | `T` | |
    /// | --- | --- | --- |
    /// | `CL_KERNEL_WORK_GROUP_SIZE` | `usize` | the largest work-group this kernel can run in |
    /// | `CL_KERNEL_COMPILE_WORK_GROUP_SIZE` | `Vec<usize>` | `reqd_work_group_size`, zeros without one |
    /// | `CL_KERNEL_LOCAL_MEM_SIZE` | `u64` | local memory used, the `__local` arguments as set now included |
    /// | `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` | `usize` | |
    /// | `CL_KERNEL_PRIVATE_MEM_SIZE` | `u64` | |
    /// | `CL_KERNEL_GLOBAL_WORK_SIZE` | `Vec<usize>` | custom devices and built-in kernels only |
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a device outside the kernel's context or another parameter
    /// (both checked first: a foreign device id can crash the driver); [`Error::Cl`] from
    /// `clGetKernelWorkGroupInfo` (`CL_INVALID_VALUE` when the value does not fit `T`).
    pub fn work_group_info<T: InfoValue>(
        &self,
        device: &Device,
        param: sys::cl_kernel_work_group_info,
    ) -> Result<T> {
        if !self.context().devices().contains(device) {
            return Err(Error::InvalidArgument(format!(
                "kernel '{}': the device is not one of its context's devices",
                self.name
            )));
        }
        if !(sys::CL_KERNEL_WORK_GROUP_SIZE..=sys::CL_KERNEL_GLOBAL_WORK_SIZE).contains(&param) {
            return Err(Error::InvalidArgument(format!(
                "clGetKernelWorkGroupInfo parameter {param:#x} is not one cl-mem knows"
            )));
        }
        // SAFETY: a valid kernel and a device of its context (checked); a 1.0-1.2 parameter
        // (checked), every accepted platform being 1.2+.
        unsafe { raw::get_work_group_info(self.raw, device.as_raw(), param) }
            .map_err(Error::cl("clGetKernelWorkGroupInfo"))
    }

    /// `CL_KERNEL_ATTRIBUTES` (1.2): the `__attribute__` qualifiers of the kernel's declaration
    /// (empty when none).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelInfo`.
    pub fn attributes(&self) -> Result<String> {
        // SAFETY: a valid kernel of a 1.2+ platform; a 1.2 parameter.
        let s: String = unsafe { get_info(Object::Kernel, self.raw, sys::CL_KERNEL_ATTRIBUTES) }?;
        Ok(s.trim_end_matches('\0').to_owned())
    }

    /// The parameters as the driver describes them (`clGetKernelArgInfo`); `None` when it gives
    /// no argument information (then by-value arguments cannot be checked and are refused; see
    /// [`Kernel::set_arg_unchecked`]).
    pub fn params(&self) -> Option<&[KernelParam]> {
        self.params.as_deref()
    }

    /// Argument records the kernel keeps for commands that may still run: one per in-order queue
    /// it was enqueued on (covering every command there since the record last saw the queue
    /// idle), one per command on out-of-order queues. Completed records are dropped as the record
    /// grows (see the module's `FIRST_SWEEP`) and when the kernel drops.
    pub fn commands_in_flight(&self) -> usize {
        self.args().in_flight.len()
    }

    /// The arguments' lock (a panic while it was held left them consistent: every change is one
    /// assignment after the driver call).
    fn args(&self) -> MutexGuard<'_, Args> {
        self.args.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn slot(&self, index: u32) -> Result<usize> {
        let i = index as usize;
        if i < self.n_args {
            Ok(i)
        } else {
            Err(Error::InvalidArgument(format!(
                "argument index {index} out of range: kernel '{}' has {} arguments",
                self.name, self.n_args
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
    pub fn set_arg<A: AsKernelArg + ?Sized>(&mut self, index: u32, arg: &A) -> Result<&mut Kernel> {
        let slot = self.slot(index)?;
        let value = arg.as_kernel_arg().arg_value();
        let bytes = self.check_arg(index, &value)?;
        self.set_value(&mut self.args(), slot, index, value, bytes)?;
        Ok(self)
    }

    /// Sets argument `index` without checking it against the parameter's declaration (the
    /// checks `set_arg` cannot make when the driver gives no argument information). Contexts and
    /// sizes are still checked by the driver.
    ///
    /// # Errors
    ///
    /// As [`Kernel::set_arg`], without [`Error::KernelArg`].
    ///
    /// # Safety
    ///
    /// 1. `arg` is of the kind the parameter declares: bytes of a pointer, image, sampler, pipe
    ///    or queue parameter would be read by the device as a handle or an address.
    pub unsafe fn set_arg_unchecked<A: AsKernelArg + ?Sized>(
        &mut self,
        index: u32,
        arg: &A,
    ) -> Result<&mut Kernel> {
        let slot = self.slot(index)?;
        let value = arg.as_kernel_arg().arg_value();
        self.check_context(&value)?;
        let bytes = match value {
            ArgValue::Local(n) => n as u64,
            _ => 0,
        };
        self.set_value(&mut self.args(), slot, index, value, bytes)?;
        Ok(self)
    }

    /// Refuses an argument the parameter's declaration does not accept, or an object of another
    /// context; returns the bytes the enqueue checks against the device (a `__local` size, a
    /// `__constant` buffer's size), 0 for other arguments.
    fn check_arg(&self, index: u32, value: &ArgValue<'_>) -> Result<u64> {
        let mem_type = self.check_context(value)?;
        let Some(params) = &self.params else {
            return match value {
                ArgValue::Bytes(_) => Err(Error::Unsupported {
                    feature: "checked by-value kernel arguments",
                    needs: format!(
                        "argument information for kernel '{}' (clGetKernelArgInfo returned \
                         CL_KERNEL_ARG_INFO_NOT_AVAILABLE); use the unsafe set_arg_unchecked",
                        self.name
                    ),
                }),
                ArgValue::Local(n) => Ok(*n as u64),
                _ => Ok(0),
            };
        };
        let param = &params[index as usize];
        let refuse = |expected: String, got: String| Error::KernelArg {
            kernel: self.name.clone(),
            index,
            expected,
            got,
        };
        let kind_err = |got: String| {
            refuse(
                format!("{} {}", param.kind.describe(), param.declared()),
                got,
            )
        };
        match value {
            ArgValue::Bytes(b) => {
                if param.kind != ParamKind::Value {
                    return Err(kind_err(format!(
                        "a by-value argument of {} bytes",
                        b.len()
                    )));
                }
                match param.size {
                    Some(n) if n != b.len() => Err(refuse(
                        format!("{} ({n} bytes)", param.declared()),
                        format!("a by-value argument of {} bytes", b.len()),
                    )),
                    _ => Ok(0),
                }
            }
            ArgValue::Local(n) if param.kind == ParamKind::Local => Ok(*n as u64),
            ArgValue::Local(_) => Err(kind_err("LocalMemory".into())),
            ArgValue::NullMem | ArgValue::Svm { .. }
                if matches!(param.kind, ParamKind::Global | ParamKind::Constant) =>
            {
                Ok(0)
            }
            ArgValue::NullMem => Err(kind_err("NullMem".into())),
            ArgValue::Svm { .. } => Err(kind_err("an SVM pointer".into())),
            ArgValue::Sampler(_) if param.kind == ParamKind::Sampler => Ok(0),
            ArgValue::Sampler(_) => Err(kind_err("a sampler".into())),
            ArgValue::Mem(m) | ArgValue::MemKeepAlive { mem: m, .. } => {
                let t = mem_type.unwrap_or(MemObjectType::Other(0));
                let ok = match param.kind {
                    ParamKind::Global | ParamKind::Constant => t == MemObjectType::Buffer,
                    ParamKind::Image(want) => t == want,
                    ParamKind::Pipe => t == MemObjectType::Pipe,
                    _ => false,
                };
                if !ok {
                    return Err(kind_err(format!("a memory object ({t:?})")));
                }
                self.check_mem(param, *m)
                    .map_err(|got| refuse(param.declared(), got))
            }
        }
    }

    /// What a memory object of the right type must also satisfy: an image's access flags allow
    /// the parameter's access qualifier, a pipe's packets are the declared element's size.
    /// Returns a `__constant` buffer's size; `Err` says what was given.
    fn check_mem(&self, param: &KernelParam, mem: sys::cl_mem) -> std::result::Result<u64, String> {
        let info = |what: sys::cl_mem_info| -> std::result::Result<u64, String> {
            // SAFETY: a valid memory object (KernelArg contract); 1.0 parameters of `u64` size
            // (`cl_mem_flags` is a bitfield, `size_t` is 64-bit on the platforms we build for).
            unsafe { object::get_info::<u64>(Object::Mem, mem, what) }
                .map_err(|e| format!("a memory object whose clGetMemObjectInfo failed: {e}"))
        };
        match param.kind {
            ParamKind::Constant => info(sys::CL_MEM_SIZE),
            ParamKind::Image(_) => {
                let flags = info(sys::CL_MEM_FLAGS)?;
                let (ro, wo) = (sys::CL_MEM_READ_ONLY, sys::CL_MEM_WRITE_ONLY);
                let refused = match param.access {
                    sys::CL_KERNEL_ARG_ACCESS_READ_ONLY => wo,
                    sys::CL_KERNEL_ARG_ACCESS_WRITE_ONLY => ro,
                    sys::CL_KERNEL_ARG_ACCESS_READ_WRITE => ro | wo,
                    _ => 0,
                };
                match flags & refused {
                    0 => Ok(0),
                    f if f == ro => Err("an image created READ_ONLY".into()),
                    _ => Err("an image created WRITE_ONLY".into()),
                }
            }
            ParamKind::Pipe => {
                let Some(want) = param.size else {
                    return Ok(0);
                };
                // SAFETY: a valid pipe (its type was checked); a 2.0 parameter of a platform
                // that created a pipe.
                let packet: u32 = unsafe { cl_raw::pipe::get_info(mem, sys::CL_PIPE_PACKET_SIZE) }
                    .map_err(|e| format!("a pipe whose clGetPipeInfo failed: {e}"))?;
                if packet as usize == want {
                    Ok(0)
                } else {
                    Err(format!(
                        "a pipe of {packet}-byte packets (the element is {want} bytes)"
                    ))
                }
            }
            _ => Ok(0),
        }
    }

    /// Refuses a memory object, sampler or SVM allocation of another context; returns a memory
    /// object's type.
    fn check_context(&self, value: &ArgValue<'_>) -> Result<Option<MemObjectType>> {
        let ours = self.context().as_raw();
        let (theirs, mem_type) = match value {
            ArgValue::Mem(m) | ArgValue::MemKeepAlive { mem: m, .. } => {
                // SAFETY: a valid memory object (KernelArg contract); 1.0 parameters.
                let ctx: sys::cl_context =
                    unsafe { get_info(Object::Mem, *m, sys::CL_MEM_CONTEXT) }?;
                // SAFETY: as above.
                let t: sys::cl_mem_object_type =
                    unsafe { get_info(Object::Mem, *m, sys::CL_MEM_TYPE) }?;
                (Some(ctx), Some(MemObjectType::from_raw(t)))
            }
            ArgValue::Sampler(s) => {
                // SAFETY: a valid sampler (KernelArg contract); a 1.0 parameter.
                let ctx: sys::cl_context =
                    unsafe { get_info(Object::Sampler, *s, sys::CL_SAMPLER_CONTEXT) }?;
                (Some(ctx), None)
            }
            ArgValue::Svm {
                keep_alive: Some(k),
                ..
            } => (k.arg_memory().and_then(|m| m.arg_context()), None),
            _ => (None, None),
        };
        match theirs {
            Some(c) if c != ours => Err(Error::InvalidArgument(format!(
                "kernel '{}': the argument belongs to another context than the kernel",
                self.name
            ))),
            _ => Ok(mem_type),
        }
    }

    fn set_value(
        &self,
        args: &mut Args,
        slot: usize,
        index: u32,
        value: ArgValue<'_>,
        bytes: u64,
    ) -> Result<()> {
        let held = match value {
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
                // SAFETY: a null `cl_mem` value is allowed for buffer arguments.
                unsafe { self.set_handle_arg(index, std::ptr::null_mut()) }?;
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
                // SAFETY: `sampler` is valid (KernelArg contract).
                unsafe { self.set_handle_arg(index, sampler) }?;
                // SAFETY: `sampler` is valid (KernelArg contract); the reference is released when
                // the slot changes or the kernel drops.
                unsafe { object::retain(Object::Sampler, sampler) }
                    .map_err(Error::cl("clRetainSampler"))?;
                Held::Sampler(sampler)
            }
        };
        // The old value is released when the last command that used it completes; an SVM
        // allocation counts the slots that hold it (only a slot can start new commands).
        if let Some(k) = held.keep_alive() {
            if let Some(m) = k.arg_memory() {
                m.slot(true);
            }
        }
        if let Some(old) = args.held[slot].replace(Arc::new(held)) {
            if let Some(k) = old.keep_alive() {
                if let Some(m) = k.arg_memory() {
                    m.slot(false);
                }
            }
        }
        args.bytes[slot] = bytes;
        Ok(())
    }

    /// `clSetKernelArg` of a handle value (`cl_mem`, `cl_sampler`: `cl-sys` declares both as
    /// `*mut c_void`).
    ///
    /// # Safety
    ///
    /// 1. `handle` is a valid object of the argument's kind, or null for a buffer argument.
    /// 2. The caller has exclusive access to the kernel's arguments (holds the argument lock).
    #[inline]
    unsafe fn set_handle_arg(&self, index: u32, handle: *mut std::ffi::c_void) -> Result<()> {
        // SAFETY: obligations 1 and 2; the value is read as one handle-sized value.
        unsafe {
            raw::set_arg(
                self.raw,
                index,
                std::mem::size_of_val(&handle),
                (&raw const handle).cast(),
            )
        }
        .map_err(Error::cl("clSetKernelArg"))
    }

    /// Sets a memory-object argument and retains the object.
    fn set_mem_arg(
        &self,
        index: u32,
        mem: sys::cl_mem,
        keep_alive: Option<KeepAlive>,
    ) -> Result<Held> {
        // SAFETY: `mem` is valid (KernelArg contract).
        unsafe { self.set_handle_arg(index, mem) }?;
        // SAFETY: `mem` is valid (KernelArg contract); the reference is released when the slot
        // changes or the kernel drops.
        unsafe { object::retain(Object::Mem, mem) }.map_err(Error::cl("clRetainMemObject"))?;
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
    /// A global size with a zero dimension is an empty range: nothing runs and a marker event
    /// (after `wait`) is returned, on every OpenCL version (PyOpenCL's `allow_empty_ndrange=True`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for 0 or more than 3 dimensions, a local size of another
    /// dimension or with a zero dimension, or an argument that was never set (all checked first);
    /// [`Error::Cl`] from `clEnqueueNDRangeKernel`.
    pub fn enqueue_nd_range(
        &self,
        queue: &Queue,
        global: &[usize],
        local: Option<&[usize]>,
        wait: &[&Event],
    ) -> Result<Event> {
        self.enqueue_locked(&mut self.args(), queue, global, local, wait)
    }

    /// Sets every argument and enqueues the kernel over `global` work-items, as one step:
    /// PyOpenCL's `kernel(queue, global_size, local_size, *args)`. `args` is a tuple of references,
    /// one per parameter in order, each checked as [`Kernel::set_arg`] checks it (all of them before
    /// any is set). Takes `&self`: a kernel shared between threads (a cached one) sets and enqueues
    /// under its lock, so no other thread's arguments slip in between.
    ///
    /// ```ignore
    /// add.call(&queue, &[n], None, (&a, &b, &c, &0.5f32))?;
    /// ```
    ///
    /// A call keeps none of its arguments once it returns (the command holds them until it
    /// completes): the next call passes them all again, and memory it used is free for host
    /// access and for a pool's next owner as soon as the command is done. For a wait list, set
    /// the arguments with [`Kernel::set_arg`] and use [`Kernel::enqueue_nd_range`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the tuple's length is not the kernel's argument count
    /// (naming both); otherwise as [`Kernel::set_arg`] and [`Kernel::enqueue_nd_range`].
    pub fn call<A: KernelArgs>(
        &self,
        queue: &Queue,
        global: &[usize],
        local: Option<&[usize]>,
        args: A,
    ) -> Result<Event> {
        let values = args.values();
        if values.len() != self.n_args {
            return Err(Error::InvalidArgument(format!(
                "kernel '{}' takes {} arguments, got {}",
                self.name,
                self.n_args,
                values.len()
            )));
        }
        let bytes = (0u32..)
            .zip(&values)
            .map(|(i, v)| self.check_arg(i, v))
            .collect::<Result<SmallVec<[u64; 8]>>>()?;
        let mut state = self.args();
        let mut result = Ok(());
        for ((i, value), b) in (0u32..).zip(values).zip(bytes) {
            result = self.set_value(&mut state, i as usize, i, value, b);
            if result.is_err() {
                break;
            }
        }
        let result =
            result.and_then(|()| self.enqueue_locked(&mut state, queue, global, local, &[]));
        // A call keeps none of its arguments: the command holds them until it completes, and
        // nothing can start another command with them, so the memory is free for host access
        // (fine-grain SVM) and for the pool's next owner once the command is done.
        clear(&mut state);
        result
    }

    fn enqueue_locked(
        &self,
        args: &mut Args,
        queue: &Queue,
        global: &[usize],
        local: Option<&[usize]>,
        wait: &[&Event],
    ) -> Result<Event> {
        let _span = tracing::debug_span!("cl_mem::kernel", kernel = %self.name, global = ?global, local = ?local, queue = ?queue.as_raw(), device = ?queue.device().as_raw()).entered();
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
            if l.contains(&0) {
                return Err(Error::InvalidArgument(format!(
                    "local size {l:?} has a zero dimension"
                )));
            }
        }
        if queue.context().as_raw() != self.context().as_raw() {
            return Err(Error::InvalidArgument(format!(
                "kernel '{}': the queue belongs to another context than the kernel",
                self.name
            )));
        }
        if let Some(i) = args.held.iter().position(Option::is_none) {
            return Err(Error::InvalidArgument(format!(
                "argument {i} of kernel '{}' is not set",
                self.name
            )));
        }
        if local.is_some() || args.bytes.iter().any(|&b| b > 0) {
            self.check_limits(args, queue, global, local)?;
        }
        if global.contains(&0) {
            // An empty range runs nothing: a marker after `wait` stands for it (PyOpenCL's
            // allow_empty_ndrange=True; OpenCL 1.2 drivers refuse a zero global size).
            return queue.enqueue_marker(wait);
        }
        // Tracked memory arguments: checked against live maps, ordered after other queues'
        // pending commands, recorded (read-only parameters as reads, the others as writes).
        let mut uses: SmallVec<[Use<'_>; 4]> = SmallVec::new();
        for (i, held) in args.held.iter().enumerate() {
            let Some(Held::Mem(_, Some(k))) = held.as_deref() else {
                continue;
            };
            if let Some(tracked) = k.arg_memory().and_then(|m| m.tracked()) {
                let read_only = self
                    .params
                    .as_ref()
                    .is_some_and(|p| p.get(i).is_some_and(|p| p.read_only));
                let access = if read_only {
                    Access::Read
                } else {
                    Access::Write
                };
                uses.push((tracked, None, access));
            }
        }
        // Memory kinds with their own host-access rule (SVM) refuse while mapped; each begun
        // command is ended below, enqueued or not.
        let mut begun: SmallVec<[&dyn ArgMemory; 4]> = SmallVec::new();
        for k in args.held.iter().flatten().filter_map(|h| h.keep_alive()) {
            if let Some(m) = k.arg_memory() {
                if let Err(e) = m.begin_command() {
                    for b in begun {
                        b.end_command();
                    }
                    return Err(e);
                }
                begun.push(m);
            }
        }
        let result = enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/kernel/events of one context (checked); every argument is set
            // and its objects are held by `self`; we own the returned event.
            unsafe {
                let ev = raw_queue::enqueue_nd_range_kernel(
                    queue.as_raw(),
                    self.raw,
                    None,
                    global,
                    local,
                    list,
                );
                Event::adopt(ev, "clEnqueueNDRangeKernel")
            }
        });
        // SVM has no reference count: an allocation must learn every queue that uses it so its
        // free can wait for them, before a map may look for pending work again.
        for m in begun {
            if result.is_ok() {
                m.used_on(queue);
            }
            m.end_command();
        }
        drop(uses);
        let ev = result?;
        record(args, queue, &ev);
        Ok(ev)
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` retains one more for the caller and drops the wrapper
// (`retain_then_drop`; if the retain fails, it forgets the wrapper instead).
unsafe impl crate::raw_handle::RawHandle for Kernel {
    crate::raw_handle::raw_handle_field!(Kernel: sys::cl_kernel);

    /// Adopts one reference to a raw kernel (no retain), reading its program
    /// (`CL_KERNEL_PROGRAM`, retained by the new `Kernel`), function name, argument count and
    /// argument descriptions (`clGetKernelArgInfo`, as [`Program::kernel`] does): PyOpenCL's
    /// `Kernel.from_int_ptr(ptr, retain=False)`.
    ///
    /// The new `Kernel` holds no argument: arguments set before through the raw handle are the
    /// caller's to keep alive (obligation 3). Without argument information (a program built
    /// elsewhere without `-cl-kernel-arg-info`), [`Kernel::params`] is `None` and only the
    /// `unsafe` unchecked setter takes arguments.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetKernelInfo`, `clGetKernelArgInfo` or the program's queries. The
    /// reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid kernel and the caller gives its reference to the new `Kernel`.
    /// 2. Nothing else sets its arguments (`clSetKernelArg`, `clSetKernelArgSVMPointer`,
    ///    `clSetKernelExecInfo`) while the `Kernel` lives: `Kernel`'s soundness rests on being the
    ///    only one to call those (the spec's one thread-safety exception).
    /// 3. Every argument already set on `raw` stays valid until it is set again through the
    ///    `Kernel` or the last command using it completed.
    unsafe fn from_raw(raw: sys::cl_kernel) -> Result<Kernel> {
        let read = || -> Result<Kernel> {
            // SAFETY: obligation 1; 1.0 parameters.
            let name: String =
                unsafe { get_info(Object::Kernel, raw, sys::CL_KERNEL_FUNCTION_NAME) }?;
            // SAFETY: as above.
            let n: u32 = unsafe { get_info(Object::Kernel, raw, sys::CL_KERNEL_NUM_ARGS) }?;
            // SAFETY: as above; the kernel's live program.
            let program: Program =
                unsafe { get_info_retained(Object::Kernel, raw, sys::CL_KERNEL_PROGRAM) }?;
            let params = read_params(raw, n, address_bytes(program.context()))?;
            Ok(Kernel {
                raw,
                name: name.trim_end_matches('\0').to_owned(),
                program,
                n_args: n as usize,
                params,
                args: Mutex::new(Args::with_slots(n as usize)),
            })
        };
        // SAFETY: obligation 1.
        unsafe { adopt_or_release(Object::Kernel, raw, read) }
    }

    /// Gives the reference away without releasing it.
    ///
    /// The `Kernel`'s argument holds end as in `Drop`: commands already enqueued keep their
    /// arguments until they complete, but the arguments still set on the raw kernel are no
    /// longer kept alive by anything: set them again before enqueueing it through the raw handle.
    fn into_raw(self) -> sys::cl_kernel {
        // `Drop` hands pending argument snapshots to event callbacks.
        crate::raw_handle::retain_then_drop(self)
    }
}

impl Kernel {
    /// Checks a launch against the queue's device: the local size within the kernel's and the
    /// device's work-group limits and dividing the global size (unless non-uniform groups are
    /// allowed), the `__local` arguments within the local memory, each `__constant` buffer
    /// within the constant buffer size. Drivers crash or abort on some of these.
    fn check_limits(
        &self,
        args: &mut Args,
        queue: &Queue,
        global: &[usize],
        local: Option<&[usize]>,
    ) -> Result<()> {
        let device = queue.device();
        let found = args
            .limits
            .iter()
            .find(|(d, _)| *d == device.as_raw())
            .map(|(_, l)| *l);
        let limits = match found {
            Some(l) => l,
            None => {
                let l = Limits::read(self, device)?;
                args.limits.push((device.as_raw(), l));
                l
            }
        };
        let name = &self.name;
        if let Some(local) = local {
            let items: usize = local.iter().product();
            if local.iter().zip(limits.work_items).any(|(l, m)| *l > m) || items > limits.work_group
            {
                return Err(Error::InvalidArgument(format!(
                    "kernel '{name}': local size {local:?} ({items} work-items) exceeds the kernel's \
                     work-group size {} on this device (CL_KERNEL_WORK_GROUP_SIZE) or the \
                     device's work-item sizes {:?}",
                    limits.work_group,
                    &limits.work_items[..local.len()]
                )));
            }
            if !limits.non_uniform && global.iter().zip(local).any(|(g, l)| g % l != 0) {
                return Err(Error::InvalidArgument(format!(
                    "kernel '{name}': local size {local:?} does not divide global size {global:?} \
                     (non-uniform work-groups need a 2.x device, or a 3.0 device that supports \
                     them, and a program built with -cl-std=CL2.0 or later)"
                )));
            }
        }
        let Some(params) = &self.params else {
            return Ok(());
        };
        let mut local_total = 0u64;
        for (i, (p, &bytes)) in (0u32..).zip(params.iter().zip(&args.bytes)) {
            let over = match p.kind {
                ParamKind::Local => {
                    local_total = local_total.saturating_add(bytes);
                    (local_total > limits.local_mem).then_some((
                        "__local arguments together",
                        limits.local_mem,
                        local_total,
                    ))
                }
                ParamKind::Constant => (bytes > limits.constant_buffer).then_some((
                    "a __constant argument",
                    limits.constant_buffer,
                    bytes,
                )),
                _ => None,
            };
            if let Some((what, limit, got)) = over {
                return Err(Error::KernelArg {
                    kernel: name.clone(),
                    index: i,
                    expected: format!(
                        "{} with {what} at most {limit} bytes on this device",
                        p.declared()
                    ),
                    got: format!("{got} bytes"),
                });
            }
        }
        Ok(())
    }
}

/// Keeps the arguments of the command behind `ev` until it completes.
fn record(args: &mut Args, queue: &Queue, ev: &Event) {
    let snapshot: Snapshot = args
        .held
        .iter()
        .flatten()
        .filter(|h| h.holds_anything())
        .cloned()
        .collect();
    args.in_flight.record(queue, ev, snapshot);
}

impl Args {
    fn with_slots(n: usize) -> Args {
        Args {
            held: (0..n).map(|_| None).collect(),
            bytes: vec![0; n],
            ..Args::default()
        }
    }
}

/// Unsets every argument slot; an SVM allocation is told its slot is gone (the commands that used
/// an argument keep their own `Arc`).
fn clear(args: &mut Args) {
    for held in args.held.iter_mut().filter_map(Option::take) {
        if let Some(m) = held.keep_alive().and_then(KeepAlive::arg_memory) {
            m.slot(false);
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        release_in_drop(Object::Kernel, self.raw);
        let args = self.args.get_mut().unwrap_or_else(PoisonError::into_inner);
        clear(args);
        // Commands still pending keep their arguments until they complete: the callback drops
        // the snapshot, on the callback worker (its drops may block: pinned storage, SVM).
        let records: Vec<(Event, Snapshot)> = args.in_flight.drain().collect();
        for (ev, snapshot) in records {
            if is_done(&ev) {
                continue;
            }
            let keep = Arc::new(std::sync::Mutex::new(Some(snapshot)));
            let in_callback = Arc::clone(&keep);
            let registered = ev.on_complete(move |_| {
                let taken = in_callback
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                drop(taken);
            });
            if let Err(e) = registered {
                tracing::warn!(error = %e, "could not defer argument release; waiting for the command");
                if let Err(e) = ev.wait() {
                    tracing::warn!(error = %e, "waiting for a kernel command failed in drop");
                }
            }
            drop(keep);
        }
    }
}

debug_fields!(Kernel: raw, name);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::KeepAlive;
    use crate::runtime::track::Tracked;

    /// A buffer's keep-alive leads the kernel to its record and counts the kernel's slot as a
    /// handle (a pool must not hand the memory out while a kernel can still start work on it); an
    /// owner of the caller's is only held.
    #[test]
    fn a_keep_alive_finds_the_record_and_counts_slots() {
        // A registry key only: the record makes no driver call here.
        let root = Tracked::new_root(std::ptr::without_provenance_mut(0x5eed), 64);
        let kept = KeepAlive::tracked(&root);
        assert!(
            Tracked::is_sole_handle(&root),
            "the keep-alive alone is no handle"
        );
        let memory = kept.arg_memory().expect("this crate's memory");
        assert!(memory.tracked().is_some());
        memory.slot(true);
        assert!(!Tracked::is_sole_handle(&root), "a set slot is a handle");
        memory.slot(false);
        assert!(Tracked::is_sole_handle(&root));
        let owner = Arc::new(7u32);
        let foreign = KeepAlive::from(Arc::clone(&owner));
        assert!(foreign.arg_memory().is_none());
        assert_eq!(Arc::strong_count(&owner), 2);
        drop(foreign);
        assert_eq!(Arc::strong_count(&owner), 1);
    }
}
