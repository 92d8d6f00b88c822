//! ndarray in and out of buffers and maps: contiguous arrays only (C or Fortran order), read and
//! written as their memory-order bytes; a strided view is a clear [`Error::InvalidArgument`]
//! (PyOpenCL: `ValueError: ndarray is not contiguous`). A map, pinned memory or fine-grain SVM
//! derefs to a slice, so `ndarray::ArrayView::from_shape(shape, &guard[..])` views it, checked
//! by ndarray to stay inside the elements (PyOpenCL does not validate map strides, reference
//! §9.10).

use ndarray::{Array, ArrayBase, ArrayView, Data, DataMut, Dimension, ShapeBuilder, StrideShape};

use crate::buffer::transfer::{HostData, HostDataMut};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::pod::{slice_as_bytes, slice_as_bytes_mut, Pod};
use crate::runtime::queue::Queue;

fn not_contiguous() -> Error {
    Error::InvalidArgument(
        "the array is not contiguous in C or Fortran order (a strided view): copy it with .as_standard_layout() first"
            .into(),
    )
}

/// True for C (row-major) or Fortran (column-major) contiguous arrays.
fn is_c_or_f<S: Data, D: Dimension>(a: &ArrayBase<S, D>) -> bool {
    a.is_standard_layout() || a.t().is_standard_layout()
}

/// A contiguous (C or Fortran order) array is host memory of a transfer, in its memory order.
impl<T: Pod, S: Data<Elem = T>, D: Dimension> HostData for ArrayBase<S, D> {
    fn host_slice(&self) -> Result<&[u8]> {
        if !is_c_or_f(self) {
            return Err(not_contiguous());
        }
        let slice = self.as_slice_memory_order().ok_or_else(not_contiguous)?;
        Ok(slice_as_bytes(slice))
    }
}

impl<T: Pod, S: DataMut<Elem = T>, D: Dimension> HostDataMut for ArrayBase<S, D> {
    fn host_slice_mut(&mut self) -> Result<&mut [u8]> {
        if !is_c_or_f(self) {
            return Err(not_contiguous());
        }
        let slice = self
            .as_slice_memory_order_mut()
            .ok_or_else(not_contiguous)?;
        Ok(slice_as_bytes_mut(slice))
    }
}

impl Buffer {
    /// The start of the buffer read into a new array of `shape` (C order, or Fortran order with
    /// `.f()`), after every command enqueued before on `queue`: the ndarray form of
    /// [`Buffer::to_vec`] (use [`Buffer::read`] into an array for a wait list or an offset).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a shape whose size overflows; [`Error::OutOfBounds`] when
    /// it needs more bytes than the buffer has; as [`Buffer::read`].
    pub fn to_array<T: Pod, Sh: ShapeBuilder>(
        &self,
        queue: &Queue,
        shape: Sh,
    ) -> Result<Array<T, Sh::Dim>> {
        let shape = shape.into_shape_with_order();
        let len = shape.raw_dim().size_checked().ok_or_else(|| {
            Error::InvalidArgument("the array shape's element count overflows".into())
        })?;
        let values = self.read_vec_of::<T>(queue, len)?;
        Array::from_shape_vec(shape, values)
            .map_err(|e| Error::InvalidArgument(format!("array shape: {e}")))
    }
}

fn shape_error(e: ndarray::ShapeError, len: usize) -> Error {
    Error::InvalidArgument(format!(
        "the view does not fit the {len} mapped elements: {e}"
    ))
}

impl Buffer {
    /// PyOpenCL's `get_host_array(shape, dtype, order)`, made safe: the host memory of a
    /// `USE_HOST_PTR` buffer as an array view of `shape`, inside a read map (so no command writes
    /// it meanwhile and the device's writes are visible, as the spec requires before the host
    /// reads `USE_HOST_PTR` memory). The view is the buffer's own host memory, not a copy.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a buffer without host memory (not `USE_HOST_PTR`: PyOpenCL's
    /// `LogicError`), or a shape that does not fit; as [`Buffer::map`].
    pub fn with_host_array<T, D, Sh, R>(
        &self,
        queue: &Queue,
        shape: Sh,
        f: impl FnOnce(ArrayView<'_, T, D>) -> R,
    ) -> Result<R>
    where
        T: Pod,
        D: Dimension,
        Sh: Into<StrideShape<D>>,
    {
        if !self.flags().contains(MemFlags::USE_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "only a USE_HOST_PTR buffer has host memory (PyOpenCL's get_host_array refuses \
                 others too)"
                    .into(),
            ));
        }
        let guard = self.map::<T, _>(queue, crate::buffer::map::ReadOnly, .., &[])?;
        let len = guard.len();
        let view = ArrayView::from_shape(shape, &guard[..]).map_err(|e| shape_error(e, len))?;
        let r = f(view);
        guard.unmap(&[])?.wait()?;
        Ok(r)
    }
}
