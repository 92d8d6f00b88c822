//! The CUDA side of external memory (feature `cuda`): device memory allocated by CUDA and
//! imported as an OpenCL [`Buffer`] over the same bytes, and binary semaphores OpenCL creates and
//! CUDA imports, on the GPU both APIs name by the same UUID.
//!
//! Built on [`cudarc`]'s driver API, which loads `libcuda` at run time: this module builds on a
//! machine without CUDA, and [`CudaDevice::matching`] answers [`Error::Unsupported`] there.
//!
//! # Memory
//!
//! [`CudaDevice::alloc_shared`] allocates with CUDA's virtual memory API (`cuMemCreate` with the
//! POSIX file-descriptor handle type, `cuMemAddressReserve`, `cuMemMap`, `cuMemSetAccess`),
//! exports the allocation with `cuMemExportToShareableHandle` and imports the descriptor with
//! [`Buffer::from_external`]. The allocation is rounded up to CUDA's granularity; the `Buffer`
//! returned covers exactly the bytes asked for (a sub-buffer of the imported whole when rounding
//! added bytes). Both sides hold the allocation ([`CudaMemory`] and the buffer's keep-alive, an
//! `Arc` of one record): it is unmapped and released when the last of them went, after
//! `cuCtxSynchronize`, so neither side's pending work can touch freed memory.
//!
//! [`CudaMemory<T>`] implements cudarc's `DeviceSlice`, `DevicePtr` and `DevicePtrMut`, so
//! cudarc's copies (`memcpy_htod`, `memcpy_dtoh`, `memcpy_dtod`), kernel launches and the
//! libraries built on them take it as they take a `CudaSlice<T>`. Unlike a `CudaSlice`, it
//! records no events: order CUDA streams other than [`CudaDevice::stream`] yourself.
//!
//! # Semaphores
//!
//! CUDA imports external semaphores (`cuImportExternalSemaphore`) but cannot create one to
//! export, so the direction is fixed: OpenCL creates a binary semaphore exportable as an opaque
//! file descriptor ([`Semaphore::new_exportable`]) and [`CudaDevice::import_semaphore`] gives
//! CUDA its side ([`CudaSemaphore`]). Either side may then signal and the other wait.

use std::fmt;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Arc;

use cudarc::driver::{
    result as cu_result, sys as cu, CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    DeviceSlice, DriverError, SyncOnDrop,
};

use super::{ExternalMemory, MemoryHandleType, Semaphore};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::pod::Pod;
use crate::runtime::device::Device;
use crate::runtime::queue::Queue;

fn cuda_error(call: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: e.to_string(),
    }
}

fn check(call: &'static str, status: cu::CUresult) -> Result<()> {
    status.result().map_err(cuda_error(call))
}

/// Loads libcuda and initialises the driver API.
///
/// # Errors
///
/// [`Error::Unsupported`] when no libcuda can be loaded; [`Error::Cuda`] from `cuInit`.
pub fn load() -> Result<()> {
    // SAFETY: only tries to open the library by its candidate names (no symbol is called).
    if !unsafe { cu::is_culib_present() } {
        return Err(Error::Unsupported {
            feature: "CUDA",
            needs: "libcuda.so.1 (the NVIDIA driver), which this machine lacks".into(),
        });
    }
    cu_result::init().map_err(cuda_error("cuInit"))
}

/// The CUDA device that is the same GPU as an OpenCL device, with the primary context and one
/// stream for the shared work.
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    device: Device,
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.ctx.ordinal())
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl CudaDevice {
    /// The CUDA device whose UUID (`cuDeviceGetUuid`) equals `device`'s `CL_DEVICE_UUID_KHR`.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when the OpenCL device lacks `cl_khr_device_uuid` (checked before
    /// CUDA is loaded), when libcuda is missing, or when no CUDA device has that UUID;
    /// [`Error::Cuda`] from the CUDA calls.
    pub fn matching(device: &Device) -> Result<CudaDevice> {
        let uuid = device.uuid()?;
        load()?;
        let n = CudaContext::device_count().map_err(cuda_error("cuDeviceGetCount"))?;
        for ordinal in 0..n {
            let dev = cu_result::device::get(ordinal).map_err(cuda_error("cuDeviceGet"))?;
            let u = cu_result::device::get_uuid(dev).map_err(cuda_error("cuDeviceGetUuid"))?;
            if u.bytes.map(|b| b as u8) == uuid {
                let ordinal = usize::try_from(ordinal).unwrap_or_default();
                let ctx =
                    CudaContext::new(ordinal).map_err(cuda_error("cuDevicePrimaryCtxRetain"))?;
                let stream = ctx.new_stream().map_err(cuda_error("cuStreamCreate"))?;
                return Ok(CudaDevice {
                    ctx,
                    stream,
                    device: *device,
                });
            }
        }
        Err(Error::Unsupported {
            feature: "CudaDevice::matching",
            needs: format!(
                "a CUDA device with the OpenCL device's UUID {}; none of {n} has it",
                uuid.iter().map(|b| format!("{b:02x}")).collect::<String>()
            ),
        })
    }

    /// The CUDA context (the device's primary context).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream [`CudaMemory`] reports as its own.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// `len` elements of device memory allocated by CUDA and shared with OpenCL: the CUDA side
    /// and an OpenCL [`Buffer`] of `queue`'s context over the same bytes, acquired on `queue`.
    /// The contents are whatever the allocation held.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for zero elements, a byte count that overflows, or a queue of
    /// another device; [`Error::Unsupported`] when the OpenCL device cannot import opaque file
    /// descriptors (checked before CUDA allocates); [`Error::Cuda`] from the CUDA calls;
    /// otherwise as [`Buffer::from_external`] and [`Buffer::sub_buffer_range`].
    pub fn alloc_shared<T: Pod + DeviceRepr>(
        &self,
        queue: &Queue,
        len: usize,
    ) -> Result<(Buffer, CudaMemory<T>)> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{len} elements of {} bytes is not a positive byte count",
                    size_of::<T>()
                ))
            })?;
        if *queue.device() != self.device {
            return Err(Error::InvalidArgument(
                "the queue is not of the CUDA device's OpenCL device".into(),
            ));
        }
        if !self
            .device
            .external_memory_import_handle_types()?
            .contains(&MemoryHandleType::OPAQUE_FD)
        {
            return Err(Error::Unsupported {
                feature: "CudaDevice::alloc_shared",
                needs: "OPAQUE_FD in CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR".into(),
            });
        }
        let alloc = Arc::new(VmmAllocation::new(&self.ctx, bytes)?);
        let fd = alloc.export_fd()?;
        let memory = ExternalMemory::opaque_fd(fd, alloc.size, Arc::clone(&alloc));
        let root = Buffer::from_external(queue, MemFlags::READ_WRITE, memory)?;
        let buffer = if alloc.size == bytes {
            root
        } else {
            root.sub_buffer_range(0..bytes)?
        };
        Ok((
            buffer,
            CudaMemory {
                alloc,
                len,
                stream: Arc::clone(&self.stream),
                _element: PhantomData,
            },
        ))
    }

    /// CUDA's side of `semaphore` (exported by OpenCL as an opaque file descriptor, imported
    /// with `cuImportExternalSemaphore`, which then owns the descriptor).
    ///
    /// # Errors
    ///
    /// As [`Semaphore::export_fd`]; [`Error::Cuda`] from `cuImportExternalSemaphore` (the
    /// descriptor is closed).
    pub fn import_semaphore(&self, semaphore: &Semaphore) -> Result<CudaSemaphore> {
        let fd = semaphore.export_fd()?;
        self.ctx
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        // SAFETY: a plain C struct for which all-zero bytes are valid (no flags, no reserved
        // bits); the fields that matter are set below.
        let mut desc: cu::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = cu::CUexternalSemaphoreHandleType::CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
        desc.handle.fd = fd.as_raw_fd();
        let mut raw: cu::CUexternalSemaphore = std::ptr::null_mut();
        // SAFETY: the context is current; `desc` names a descriptor we own; `raw` is a live
        // out-parameter.
        check("cuImportExternalSemaphore", unsafe {
            cu::cuImportExternalSemaphore(&mut raw, &desc)
        })?;
        // CUDA owns the descriptor after a successful import.
        let _ = fd.into_raw_fd();
        Ok(CudaSemaphore {
            raw,
            ctx: Arc::clone(&self.ctx),
        })
    }
}

/// One allocation of CUDA's virtual memory API: physical memory, its reserved address range and
/// mapping. Freed (unmapped, address released, handle released) by `Drop`, after
/// `cuCtxSynchronize`.
struct VmmAllocation {
    ctx: Arc<CudaContext>,
    handle: cu::CUmemGenericAllocationHandle,
    /// The mapped address; 0 until mapped.
    ptr: cu::CUdeviceptr,
    /// The reserved (and mapped) bytes: the request rounded up to the granularity.
    size: usize,
    /// Whether `ptr` is mapped and its access set.
    mapped: bool,
}

impl VmmAllocation {
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<VmmAllocation> {
        ctx.bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        let ordinal = i32::try_from(ctx.ordinal()).unwrap_or_default();
        // SAFETY: plain C structs for which all-zero bytes are valid; fields set below.
        let mut prop: cu::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = cu::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.requestedHandleTypes =
            cu::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        prop.location.type_ = cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = ordinal;
        let mut granularity = 0usize;
        // SAFETY: a live out-parameter and a valid property struct.
        check("cuMemGetAllocationGranularity", unsafe {
            cu::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                cu::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        })?;
        let size = bytes
            .checked_next_multiple_of(granularity.max(1))
            .ok_or_else(|| Error::InvalidArgument(format!("{bytes} bytes overflow")))?;
        let mut handle: cu::CUmemGenericAllocationHandle = 0;
        // SAFETY: a live out-parameter; the context is current.
        check("cuMemCreate", unsafe {
            cu::cuMemCreate(&mut handle, size, &prop, 0)
        })?;
        let mut alloc = VmmAllocation {
            ctx: Arc::clone(ctx),
            handle,
            ptr: 0,
            size,
            mapped: false,
        };
        let mut ptr: cu::CUdeviceptr = 0;
        // SAFETY: a live out-parameter; `size` is a multiple of the granularity.
        check("cuMemAddressReserve", unsafe {
            cu::cuMemAddressReserve(&mut ptr, size, 0, 0, 0)
        })?;
        alloc.ptr = ptr;
        // SAFETY: a reserved range and a handle of exactly `size` bytes.
        check("cuMemMap", unsafe { cu::cuMemMap(ptr, size, 0, handle, 0) })?;
        alloc.mapped = true;
        // SAFETY: plain C struct, all-zero valid; fields set below.
        let mut access: cu::CUmemAccessDesc = unsafe { std::mem::zeroed() };
        access.location.type_ = cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id = ordinal;
        access.flags = cu::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        // SAFETY: a mapped range; one access descriptor.
        check("cuMemSetAccess", unsafe {
            cu::cuMemSetAccess(ptr, size, &access, 1)
        })?;
        Ok(alloc)
    }

    /// A new file descriptor for the allocation (`cuMemExportToShareableHandle`), owned by the
    /// caller.
    fn export_fd(&self) -> Result<OwnedFd> {
        self.ctx
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: the handle was created with the POSIX file-descriptor type; `fd` is the `int`
        // that handle type writes.
        check("cuMemExportToShareableHandle", unsafe {
            cu::cuMemExportToShareableHandle(
                (&raw mut fd).cast(),
                self.handle,
                cu::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        if fd < 0 {
            return Err(Error::Cuda {
                call: "cuMemExportToShareableHandle",
                message: format!("returned descriptor {fd}"),
            });
        }
        // SAFETY: a fresh descriptor CUDA gave us; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

// SAFETY: CUDA driver API calls are thread-safe; the handle and address are plain values, used
// after binding the context to the calling thread.
unsafe impl Send for VmmAllocation {}
// SAFETY: as for `Send`; nothing in it is mutable after construction.
unsafe impl Sync for VmmAllocation {}

impl Drop for VmmAllocation {
    fn drop(&mut self) {
        let warn = |call: &'static str, r: std::result::Result<(), DriverError>| {
            if let Err(e) = r {
                crate::error::drop_failed(call, None, e.to_string());
            }
        };
        warn("cuCtxSetCurrent", self.ctx.bind_to_thread());
        // Work either API enqueued on the memory has completed by now on the OpenCL side (the
        // destructor callback); the CUDA side's may still run on any stream.
        warn("cuCtxSynchronize", self.ctx.synchronize());
        if self.mapped {
            // SAFETY: a range this allocation mapped; no work uses it any more (above).
            warn(
                "cuMemUnmap",
                unsafe { cu::cuMemUnmap(self.ptr, self.size) }.result(),
            );
        }
        if self.ptr != 0 {
            // SAFETY: a range this allocation reserved, now unmapped.
            warn(
                "cuMemAddressFree",
                unsafe { cu::cuMemAddressFree(self.ptr, self.size) }.result(),
            );
        }
        // SAFETY: the handle this allocation created; its mapping is gone. An exported
        // descriptor holds its own reference to the physical memory.
        warn(
            "cuMemRelease",
            unsafe { cu::cuMemRelease(self.handle) }.result(),
        );
    }
}

/// CUDA's view of memory shared with an OpenCL [`Buffer`] ([`CudaDevice::alloc_shared`]): `len`
/// elements of `T`. Keeps the allocation alive (as the buffer does); usable wherever cudarc takes
/// a device slice. Not `Clone`: `&mut` access stands for "CUDA writes".
pub struct CudaMemory<T> {
    alloc: Arc<VmmAllocation>,
    len: usize,
    stream: Arc<CudaStream>,
    _element: PhantomData<T>,
}

impl<T> fmt::Debug for CudaMemory<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaMemory")
            .field("ptr", &self.alloc.ptr)
            .field("len", &self.len)
            .field("allocated_bytes", &self.alloc.size)
            .finish()
    }
}

impl<T> CudaMemory<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements (never: allocations are positive).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills every 32-bit word of the elements with `value` on the memory's stream
    /// (`cuMemsetD32Async`); ordered after the stream's earlier work only.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the byte count is not a multiple of 4; [`Error::Cuda`]
    /// from the call.
    pub fn fill_u32(&mut self, value: u32) -> Result<()> {
        let bytes = self.len * size_of::<T>();
        if !bytes.is_multiple_of(4) {
            return Err(Error::InvalidArgument(format!(
                "fill_u32 needs a multiple of 4 bytes, not {bytes}"
            )));
        }
        self.alloc
            .ctx
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        // SAFETY: the range is this allocation's mapped memory (`bytes <= size`); the stream is
        // of the same context.
        check("cuMemsetD32Async", unsafe {
            cu::cuMemsetD32Async(self.alloc.ptr, value, bytes / 4, self.stream.cu_stream())
        })
    }
}

impl<T> DeviceSlice<T> for CudaMemory<T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl<T> DevicePtr<T> for CudaMemory<T> {
    fn device_ptr<'a>(&'a self, _stream: &'a CudaStream) -> (cu::CUdeviceptr, SyncOnDrop<'a>) {
        (self.alloc.ptr, SyncOnDrop::Record(None))
    }
}

impl<T> DevicePtrMut<T> for CudaMemory<T> {
    fn device_ptr_mut<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (cu::CUdeviceptr, SyncOnDrop<'a>) {
        (self.alloc.ptr, SyncOnDrop::Record(None))
    }
}

/// CUDA's side of a binary [`Semaphore`] ([`CudaDevice::import_semaphore`]).
pub struct CudaSemaphore {
    raw: cu::CUexternalSemaphore,
    ctx: Arc<CudaContext>,
}

// SAFETY: CUDA driver API calls are thread-safe; the handle is used after binding the context.
unsafe impl Send for CudaSemaphore {}
// SAFETY: as for `Send`; nothing in it is mutable.
unsafe impl Sync for CudaSemaphore {}

crate::raw_handle::debug_fields!(CudaSemaphore: raw, ..);

impl CudaSemaphore {
    /// Signals the semaphore once `stream`'s earlier work completed
    /// (`cuSignalExternalSemaphoresAsync`); an OpenCL queue waiting on it
    /// ([`Queue::wait_semaphore`]) then runs on.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] from the call.
    pub fn signal(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: the signal call with its parameter struct.
        unsafe {
            self.on_stream(
                stream,
                "cuSignalExternalSemaphoresAsync",
                cu::cuSignalExternalSemaphoresAsync,
            )
        }
    }

    /// Makes `stream`'s later work wait until the semaphore is signalled (by
    /// [`Queue::signal_semaphore`]): `cuWaitExternalSemaphoresAsync`.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] from the call.
    pub fn wait(&self, stream: &CudaStream) -> Result<()> {
        // SAFETY: the wait call with its parameter struct.
        unsafe {
            self.on_stream(
                stream,
                "cuWaitExternalSemaphoresAsync",
                cu::cuWaitExternalSemaphoresAsync,
            )
        }
    }

    /// What `signal` and `wait` share: the semaphore's context made current, then `call` (named
    /// `name`) on this one semaphore with all-zero parameters (a binary semaphore's: no fence
    /// value, no flags), in `stream`'s order.
    ///
    /// # Safety
    ///
    /// `call` is `cuSignalExternalSemaphoresAsync` or `cuWaitExternalSemaphoresAsync`, and `P`
    /// its parameter struct (plain C data).
    unsafe fn on_stream<P>(
        &self,
        stream: &CudaStream,
        name: &'static str,
        call: unsafe fn(
            *const cu::CUexternalSemaphore,
            *const P,
            std::ffi::c_uint,
            cu::CUstream,
        ) -> cu::CUresult,
    ) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        // SAFETY: `P` is a parameter struct of plain C data (the caller's obligation).
        let params: P = unsafe { std::mem::zeroed() };
        // SAFETY: a live imported semaphore, one parameter struct, a stream of the context.
        check(name, unsafe {
            call(&self.raw, &params, 1, stream.cu_stream())
        })
    }
}

impl Drop for CudaSemaphore {
    fn drop(&mut self) {
        if let Err(e) = self.ctx.bind_to_thread() {
            crate::error::drop_failed("cuCtxSetCurrent", None, e.to_string());
        }
        // Work that waits on or signals it may still be queued: let it finish first.
        if let Err(e) = self.ctx.synchronize() {
            crate::error::drop_failed("cuCtxSynchronize", None, e.to_string());
        }
        // SAFETY: the semaphore this value imported; no queued work uses it (above).
        if let Err(e) = unsafe { cu::cuDestroyExternalSemaphore(self.raw) }.result() {
            crate::error::drop_failed("cuDestroyExternalSemaphore", None, e.to_string());
        }
    }
}
