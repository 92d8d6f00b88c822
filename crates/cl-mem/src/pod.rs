//! [`Pod`]: plain-old-data types that may be copied to and from device memory byte for byte and
//! passed as kernel scalars.

/// A type whose values are plain bytes: no padding, no pointers, every bit pattern valid.
///
/// Implemented for the fixed-width integers, `f32`, `f64` and arrays of `Pod`. `usize`/`isize`
/// are deliberately **not** `Pod`: a kernel's `size_t` is `CL_DEVICE_ADDRESS_BITS` wide, which
/// need not match the host (pass `u32` or `u64` explicitly).
///
/// # Safety
///
/// 1. `Self` has no padding bytes and no interior mutability.
/// 2. Every bit pattern of `size_of::<Self>()` bytes is a valid `Self`.
/// 3. `Self` holds no references or pointers whose validity matters.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: primitive numbers: no padding, every bit pattern valid.
        unsafe impl Pod for $t {}
    )*};
}
pod!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, f32, f64);

// SAFETY: an array of `Pod` has no padding between elements and inherits validity of every bit
// pattern from its element type.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// The bytes of a `Pod` value.
pub(crate) fn bytes_of<T: Pod>(value: &T) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so all `size_of::<T>()` bytes are initialised.
    unsafe {
        std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>())
    }
}

/// The bytes of a `Pod` slice.
pub(crate) fn slice_as_bytes<T: Pod>(values: &[T]) -> &[u8] {
    // SAFETY: `T: Pod` has no padding; the byte length cannot overflow because the slice exists.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// The bytes of a mutable `Pod` slice; any bytes written make valid `T`s.
pub(crate) fn slice_as_bytes_mut<T: Pod>(values: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(values);
    // SAFETY: `T: Pod` has no padding and accepts every bit pattern, so writing arbitrary bytes
    // keeps the slice valid; the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let v = [1u32, 0x0102_0304];
        let b = slice_as_bytes(&v);
        assert_eq!(b.len(), 8);
        assert_eq!(&b[4..], &0x0102_0304u32.to_ne_bytes());
        let mut w = [0u32; 2];
        slice_as_bytes_mut(&mut w).copy_from_slice(b);
        assert_eq!(w, v);
        assert_eq!(bytes_of(&1.5f32), &1.5f32.to_ne_bytes());
        assert_eq!(bytes_of(&[1u16, 2]).len(), 4);
    }
}
