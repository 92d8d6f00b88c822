//! The one "ask the size, then fill" helper behind every `get_info` wrapper.
//!
//! Every `clGet*Info` call has the shape `(param_value_size, param_value, param_value_size_ret)`.
//! `query` (private: the `get_info` wrappers call it) calls it twice (size, then fill) and decodes the bytes into any [`InfoValue`]:
//! scalars (`u32`, `u64`, `usize`, handles, ...), `bool` (from `cl_bool`), `String` (NUL
//! stripped), and `Vec<T>` of any [`InfoElement`]. A returned size that does not fit the requested
//! type is reported as `CL_INVALID_VALUE`, the status the spec prescribes for a `param_value_size`
//! that does not match the parameter's type.

use std::ffi::c_void;
use std::mem::size_of;

use crate::error::{check, ClError};
use crate::sys;

/// A plain-old-data element an info query may return: every bit pattern of `size_of::<Self>()`
/// bytes is a valid value.
///
/// # Safety
///
/// 1. Every bit pattern of `size_of::<Self>()` bytes must be a valid `Self` (no `bool`, no
///    references, no enums with invalid discriminants, no padding that must be initialised).
pub unsafe trait InfoElement: Sized {}

macro_rules! info_elements {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: integers and raw pointers are valid for every bit pattern.
        unsafe impl InfoElement for $t {}
    )*};
}
info_elements!(
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    usize,
    isize,
    *mut c_void,
    *const c_void
);

// SAFETY: two `cl_uint` fields, `#[repr(C)]`, no padding; every bit pattern is a value.
unsafe impl InfoElement for sys::cl_image_format {}
// SAFETY: `#[repr(C)]` of a `cl_uint` and a `[c_char; 64]`; every bit pattern is a value.
unsafe impl InfoElement for crate::extra::cl_name_version {}

/// A type an info query can decode its bytes into.
pub trait InfoValue: Sized {
    /// Decodes the bytes the driver wrote.
    ///
    /// # Errors
    ///
    /// [`ClError::InvalidValue`] when the byte count does not fit the type.
    fn from_info_bytes(bytes: &[u8]) -> Result<Self, ClError>;
}

fn read_element<T: InfoElement>(bytes: &[u8]) -> T {
    debug_assert!(bytes.len() >= size_of::<T>());
    // SAFETY: `bytes` holds at least `size_of::<T>()` readable bytes (callers check), the read is
    // unaligned-safe, and `T: InfoElement` makes any bit pattern a valid `T`.
    unsafe { bytes.as_ptr().cast::<T>().read_unaligned() }
}

impl<T: InfoElement> InfoValue for T {
    fn from_info_bytes(bytes: &[u8]) -> Result<Self, ClError> {
        if bytes.len() == size_of::<T>() {
            Ok(read_element(bytes))
        } else {
            Err(ClError::InvalidValue)
        }
    }
}

impl InfoValue for bool {
    fn from_info_bytes(bytes: &[u8]) -> Result<Self, ClError> {
        sys::cl_bool::from_info_bytes(bytes).map(|b| b != sys::CL_FALSE)
    }
}

impl InfoValue for String {
    fn from_info_bytes(bytes: &[u8]) -> Result<Self, ClError> {
        // The spec returns a NUL-terminated string; some drivers pad with several NULs or none.
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

impl<T: InfoElement> InfoValue for Vec<T> {
    fn from_info_bytes(bytes: &[u8]) -> Result<Self, ClError> {
        let n = size_of::<T>();
        if n == 0 || !bytes.len().is_multiple_of(n) {
            return Err(ClError::InvalidValue);
        }
        Ok(bytes.chunks_exact(n).map(read_element::<T>).collect())
    }
}

/// Runs a `clGet*Info`-shaped call twice (size, then fill) and decodes the result.
///
/// `call(param_value_size, param_value, param_value_size_ret)` must forward to one `clGet*Info`
/// function with the object and parameter name already bound.
///
/// # Errors
///
/// The status of either call, or [`ClError::InvalidValue`] when the size does not fit `T`.
///
/// # Safety
///
/// 1. `call` must behave like a `clGet*Info` function: write at most `param_value_size` bytes to
///    `param_value` (when non-null) and the needed size to `param_value_size_ret` (when non-null).
pub(crate) unsafe fn query<T, F>(mut call: F) -> Result<T, ClError>
where
    T: InfoValue,
    F: FnMut(usize, *mut c_void, *mut usize) -> sys::cl_int,
{
    let mut size = 0usize;
    check(call(0, std::ptr::null_mut(), &mut size))?;
    let mut bytes = vec![0u8; size];
    if size > 0 {
        // No size out-parameter on the fill call: the size query already answered it, and a
        // driver that leaves it unwritten must not truncate the value to nothing.
        check(call(size, bytes.as_mut_ptr().cast(), std::ptr::null_mut()))?;
    }
    T::from_info_bytes(&bytes)
}

/// Runs a count-then-fill list call (`clGetPlatformIDs`, `clGetDeviceIDs`, ...) twice: the
/// count, then that many entries, each first made by `empty`.
///
/// # Errors
///
/// The status of either call.
///
/// # Safety
///
/// 1. `call(num_entries, entries, num_entries_ret)` must write at most `num_entries` entries to
///    `entries` (when non-null) and the count to `num_entries_ret` (when non-null).
pub(crate) unsafe fn query_list<T, F>(
    empty: impl FnMut() -> T,
    mut call: F,
) -> Result<Vec<T>, ClError>
where
    F: FnMut(sys::cl_uint, *mut T, *mut sys::cl_uint) -> sys::cl_int,
{
    let mut n: sys::cl_uint = 0;
    check(call(0, std::ptr::null_mut(), &mut n))?;
    let mut list: Vec<T> = std::iter::repeat_with(empty).take(n as usize).collect();
    if n > 0 {
        check(call(n, list.as_mut_ptr(), &mut n))?;
        list.truncate(n as usize);
    }
    Ok(list)
}

/// Writes the `clGet*Info` wrappers once: `pub unsafe fn $name($params) => $c;` becomes a
/// function generic over `T: InfoValue` that passes `$params` and then the size, value and
/// size-out parameters to `sys::$c` through [`query`]. Each invocation carries its own docs (the
/// object's errors and safety obligations); `tests/tidy.rs` reads it as a hand-written wrapper.
macro_rules! info_fn {
    ($(#[$attr:meta])* pub unsafe fn $name:ident($($param:ident: $ty:ty),+) => $c:ident;) => {
        $(#[$attr])*
        pub unsafe fn $name<T: $crate::info::InfoValue>(
            $($param: $ty),+
        ) -> Result<T, $crate::error::ClError> {
            // SAFETY: forwards to the C query with the caller's handles (the obligations above).
            unsafe {
                $crate::info::query(|size, value, ret| {
                    $crate::sys::$c($($param,)+ size, value, ret)
                })
            }
        }
    };
}
pub(crate) use info_fn;

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `clGet*Info` over fixed bytes, following the spec's size rules.
    fn fake(value: Vec<u8>) -> impl FnMut(usize, *mut c_void, *mut usize) -> sys::cl_int {
        move |size, ptr, ret| {
            if !ptr.is_null() {
                if size < value.len() {
                    return sys::CL_INVALID_VALUE;
                }
                // SAFETY: the caller gave `size >= value.len()` writable bytes at `ptr`.
                unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), ptr.cast(), value.len()) };
            }
            if !ret.is_null() {
                // SAFETY: `ret` points at a live `usize` owned by `query`.
                unsafe { *ret = value.len() };
            }
            sys::CL_SUCCESS
        }
    }

    #[test]
    fn decodes_strings_without_the_nul() {
        // SAFETY: `fake` follows the clGet*Info contract.
        let s: String = unsafe { query(fake(b"OpenCL 3.0 PoCL\0".to_vec())) }.unwrap();
        assert_eq!(s, "OpenCL 3.0 PoCL");
        // SAFETY: as above.
        let empty: String = unsafe { query(fake(Vec::new())) }.unwrap();
        assert_eq!(empty, "");
    }

    #[test]
    fn decodes_scalars_bools_and_vectors() {
        // SAFETY: `fake` follows the clGet*Info contract.
        let v: u64 = unsafe { query(fake(4096u64.to_ne_bytes().to_vec())) }.unwrap();
        assert_eq!(v, 4096);
        // SAFETY: as above.
        let b: bool = unsafe { query(fake(1u32.to_ne_bytes().to_vec())) }.unwrap();
        assert!(b);
        let bytes: Vec<u8> = [1usize, 2, 3]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        // SAFETY: as above.
        let sizes: Vec<usize> = unsafe { query(fake(bytes)) }.unwrap();
        assert_eq!(sizes, vec![1, 2, 3]);
    }

    #[test]
    fn size_mismatch_is_invalid_value() {
        // SAFETY: `fake` follows the clGet*Info contract.
        let r: Result<u64, _> = unsafe { query(fake(vec![0u8; 4])) };
        assert_eq!(r, Err(ClError::InvalidValue));
        // SAFETY: as above.
        let r: Result<Vec<u32>, _> = unsafe { query(fake(vec![0u8; 6])) };
        assert_eq!(r, Err(ClError::InvalidValue));
    }

    /// `query_list`'s edge cases: a count of 0 makes no fill call, a list that shrank between
    /// the calls is cut to what the fill wrote, and either call's error is returned.
    #[test]
    fn list_queries_handle_empty_shrunk_and_failing_lists() {
        // A fake list call answering `counts` in turn (count call, fill call), filling `7`s.
        let fake = |counts: [u32; 2], fill_status: sys::cl_int| {
            let mut call = 0;
            move |n: sys::cl_uint, out: *mut u32, ret: *mut sys::cl_uint| {
                let count = counts[call];
                call += 1;
                assert!(call <= 2, "more than a count and a fill call");
                if !out.is_null() {
                    for i in 0..n.min(count) as usize {
                        // SAFETY: `query_list` gave `n` writable entries at `out`.
                        unsafe { *out.add(i) = 7 };
                    }
                }
                if !ret.is_null() {
                    // SAFETY: `ret` points at `query_list`'s live count.
                    unsafe { *ret = count };
                }
                if out.is_null() {
                    sys::CL_SUCCESS
                } else {
                    fill_status
                }
            }
        };
        let list = |counts, fill_status| {
            // SAFETY: `fake` writes at most `n` entries, and the count only when asked.
            unsafe { query_list(|| 0u32, fake(counts, fill_status)) }
        };
        assert_eq!(
            list([0, 0], sys::CL_INVALID_VALUE),
            Ok(Vec::new()),
            "no fill call for a count of 0"
        );
        assert_eq!(list([3, 2], sys::CL_SUCCESS), Ok(vec![7, 7]));
        assert_eq!(
            list([2, 5], sys::CL_SUCCESS),
            Ok(vec![7, 7]),
            "no more entries than were allocated"
        );
        assert_eq!(
            list([2, 2], sys::CL_OUT_OF_HOST_MEMORY),
            Err(ClError::OutOfHostMemory)
        );
        // SAFETY: the closure writes nothing.
        let count_failed = unsafe { query_list(|| 0u32, |_, _, _| sys::CL_INVALID_PLATFORM) };
        assert_eq!(count_failed, Err(ClError::InvalidPlatform));
    }

    #[test]
    fn driver_errors_propagate() {
        // SAFETY: the closure writes nothing.
        let r: Result<u32, _> = unsafe { query(|_, _, _| sys::CL_INVALID_DEVICE) };
        assert_eq!(r, Err(ClError::InvalidDevice));
    }
}
