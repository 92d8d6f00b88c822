//! The `cl_khr_external_memory`, `cl_khr_semaphore`, `cl_khr_external_semaphore` and
//! `cl_khr_device_uuid` values only this module reads (`cl-sys` 0.4 has none): each is behind a
//! typed item (`MemoryHandleType::OPAQUE_FD`, `Device::uuid`, `Semaphore::new_exportable`, ...),
//! so none is part of a public surface. The entry-point tables and the types of their signatures
//! are `cl_raw::external`'s, re-exported here so the module has one `raw_ext::` path.
//!
//! Every value was checked against the Khronos `CL/cl_ext.h` (OpenCL-Headers, generated from the
//! XML registry).

pub(crate) use cl_raw::external::*;
use cl_raw::sys;

// cl_khr_device_uuid
/// `CL_UUID_SIZE_KHR`: bytes of a device or driver UUID.
pub(crate) const CL_UUID_SIZE_KHR: usize = 16;
/// `CL_DEVICE_UUID_KHR` (`cl_uchar[16]`).
pub(crate) const CL_DEVICE_UUID_KHR: sys::cl_device_info = 0x106A;

// cl_khr_external_memory
/// `CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR`
/// (`cl_external_memory_handle_type_khr[]`).
pub(crate) const CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR: sys::cl_device_info = 0x204F;
/// `CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR` (`cl_khr_external_memory_opaque_fd`): a POSIX file
/// descriptor; also the `cl_mem_properties` key that imports one.
pub(crate) const CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR: u32 = 0x2060;
/// `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR` (`cl_khr_external_memory_dma_buf`).
pub(crate) const CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR: u32 = 0x2067;

// cl_khr_semaphore
/// `CL_SEMAPHORE_TYPE_BINARY_KHR` (a `cl_semaphore_type_khr`).
pub(crate) const CL_SEMAPHORE_TYPE_BINARY_KHR: u32 = 1;
/// `CL_SEMAPHORE_REFERENCE_COUNT_KHR`.
pub(crate) const CL_SEMAPHORE_REFERENCE_COUNT_KHR: cl_semaphore_info_khr = 0x203A;
/// `CL_SEMAPHORE_TYPE_KHR`: a semaphore property key and info query.
pub(crate) const CL_SEMAPHORE_TYPE_KHR: cl_semaphore_info_khr = 0x203D;
/// `CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR`: a property key, followed by device ids and
/// [`CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR`].
pub(crate) const CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR: cl_semaphore_info_khr = 0x2053;
/// `CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR`.
pub(crate) const CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR: u64 = 0;

// cl_khr_external_semaphore
/// `CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR` (`cl_external_semaphore_handle_type_khr[]`).
pub(crate) const CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR: sys::cl_device_info = 0x204D;
/// `CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR` (`cl_external_semaphore_handle_type_khr[]`).
pub(crate) const CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR: sys::cl_device_info = 0x204E;
/// `CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR`: a property key, followed by handle types and
/// [`CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR`].
pub(crate) const CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR: cl_semaphore_info_khr = 0x203F;
/// `CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR`.
pub(crate) const CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR: u64 = 0;
/// `CL_SEMAPHORE_EXPORTABLE_KHR` (`cl_bool`).
pub(crate) const CL_SEMAPHORE_EXPORTABLE_KHR: cl_semaphore_info_khr = 0x2054;
/// `CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR` (`cl_khr_external_semaphore_opaque_fd`): a POSIX file
/// descriptor; also the property key that imports one.
pub(crate) const CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR: cl_external_semaphore_handle_type_khr = 0x2055;
/// `CL_SEMAPHORE_HANDLE_SYNC_FD_KHR` (`cl_khr_external_semaphore_sync_fd`).
pub(crate) const CL_SEMAPHORE_HANDLE_SYNC_FD_KHR: cl_external_semaphore_handle_type_khr = 0x2058;
