//! Mapping an image region into host memory (`clEnqueueMapImage`), through a scope: the mapped
//! memory is reachable only inside the closure, and it is unmapped when the closure returns or
//! unwinds — no guard that `mem::forget` could leak.
//!
//! Mappings of one image (and its clones) are tracked: any number of read mappings, or one
//! writing mapping, at a time, so two live `&mut [u8]` (or a `&[u8]` and a `&mut [u8]`) never
//! alias when a CPU driver maps the same storage twice. Commands enqueued on a mapped image are
//! undefined by the spec (as with PyOpenCL): do not run them while mapping.

use std::marker::PhantomData;

use cl_raw::{queue as raw_queue, Version};
use smallvec::SmallVec;

use super::transfer::coords;
use super::{Image, ImageType};
use crate::buffer::map::{check_map_flags, MapFlags};

use crate::error::{Error, Result};
use crate::pod::Pod;
use crate::raw_handle::RawHandle;
use crate::runtime::event::{checked_list, Event};
use crate::runtime::queue::Queue;
use crate::runtime::track::Claim;

/// Whether `flags` let the host write (`WRITE` or `WRITE_INVALIDATE_REGION`).
fn writes(flags: MapFlags) -> bool {
    flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE_REGION)
}

/// A mapped image region, alive inside [`Image::map`]'s closure.
#[derive(Debug)]
pub struct ImageMapping<'a> {
    ptr: *mut u8,
    len: usize,
    row_pitch: usize,
    slice_pitch: usize,
    region: [usize; 3],
    element_size: usize,
    image_type: ImageType,
    access: MapFlags,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl ImageMapping<'_> {
    /// Bytes between rows, as the driver returned it.
    pub fn row_pitch(&self) -> usize {
        self.row_pitch
    }

    /// Bytes between slices of a 3-D image or layers of an array (0 for 1-D and 2-D images), as
    /// the driver returned it.
    pub fn slice_pitch(&self) -> usize {
        self.slice_pitch
    }

    /// The mapped bytes: from the first pixel to the last, pitches included.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the driver mapped `len` bytes at `ptr` (computed from its pitches), they stay
        // mapped while `self` lives (the scope unmaps after the closure), and the map lock
        // excludes a writing mapping of the same image.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The mapped bytes, writable.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a mapping without `WRITE` or `WRITE_INVALIDATE_REGION`.
    pub fn bytes_mut(&mut self) -> Result<&mut [u8]> {
        if !writes(self.access) {
            return Err(Error::InvalidArgument(
                "the region is mapped for reading only".into(),
            ));
        }
        // SAFETY: as in `bytes`; the map lock makes this the only mapping of the image, and
        // `&mut self` the only access to it.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    /// Byte offset of the row at `y` of slice (or layer) `z`; for 1-D arrays `y` is the layer.
    fn row_offset(&self, y: usize, z: usize) -> Result<usize> {
        let (stride_y, stride_z) = match self.image_type {
            ImageType::Image1dArray => (self.slice_pitch.max(self.row_pitch), 0),
            _ => (self.row_pitch, self.slice_pitch),
        };
        if y >= self.region[1] || z >= self.region[2] {
            return Err(Error::OutOfBounds {
                what: "row of a mapped image region",
                offset: if y >= self.region[1] { y } else { z },
                len: 1,
                size: if y >= self.region[1] {
                    self.region[1]
                } else {
                    self.region[2]
                },
            });
        }
        Ok(y * stride_y + z * stride_z)
    }

    fn typed_len<T: Pod>(&self, offset: usize) -> Result<usize> {
        let row_bytes = self.region[0] * self.element_size;
        let size = std::mem::size_of::<T>();
        if size == 0 || !row_bytes.is_multiple_of(size) {
            return Err(Error::InvalidArgument(format!(
                "a row of {row_bytes} bytes is not a whole number of {size}-byte values"
            )));
        }
        let row = self.ptr.wrapping_add(offset).cast();
        crate::error::check_aligned_ptr::<T>("mapped image row", row)?;
        Ok(row_bytes / size)
    }

    /// The pixels of row `y` of slice `z` (for 1-D arrays, `y` is the layer) as values of `T`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] outside the region; [`Error::InvalidArgument`] when a row is not a
    /// whole number of `T`; [`Error::Misaligned`] when the row is not aligned for `T`.
    pub fn row<T: Pod>(&self, y: usize, z: usize) -> Result<&[T]> {
        let offset = self.row_offset(y, z)?;
        let n = self.typed_len::<T>(offset)?;
        // SAFETY: the row lies inside the mapped bytes (offset + row bytes <= len by the layout
        // computed at mapping), is aligned for `T` (checked), and `T: Pod` accepts any bytes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.add(offset).cast::<T>(), n) })
    }

    /// Row `y` of slice `z`, writable; see [`ImageMapping::row`].
    ///
    /// # Errors
    ///
    /// As [`ImageMapping::row`], and [`Error::InvalidArgument`] for a read mapping.
    pub fn row_mut<T: Pod>(&mut self, y: usize, z: usize) -> Result<&mut [T]> {
        if !writes(self.access) {
            return Err(Error::InvalidArgument(
                "the region is mapped for reading only".into(),
            ));
        }
        let offset = self.row_offset(y, z)?;
        let n = self.typed_len::<T>(offset)?;
        // SAFETY: as in `row`; exclusive through `&mut self` and the map lock.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset).cast::<T>(), n) })
    }
}

/// Unmaps on every exit from [`Image::map`], unwinding included.
struct Unmap<'a> {
    image: &'a Image,
    queue: &'a Queue,
    ptr: *mut std::ffi::c_void,
    write: bool,
    done: bool,
    /// The map's claim on the image's bytes, released after the unmap.
    claim: Option<Claim>,
}

impl Unmap<'_> {
    fn unmap(&mut self) -> Result<()> {
        // SAFETY: a valid queue and image of one context; `ptr` came from mapping this image on
        // this queue and was not unmapped; the host stops using it (the closure has returned).
        let ev = unsafe {
            crate::buffer::tracked::enqueue_unmap(
                self.queue,
                self.image.raw,
                self.image.tracked(),
                self.ptr,
                self.write,
                SmallVec::new(),
            )
        }?;
        // Only an enqueued unmap ends the mapping: after a failure (issue 16) `Drop` unmaps
        // again and the claim holds until then; marking it done first leaked the mapping.
        self.done = true;
        self.claim = None;
        ev.wait()
    }
}

impl Drop for Unmap<'_> {
    fn drop(&mut self) {
        if !self.done {
            if let Err(e) = self.unmap() {
                tracing::warn!(error = %e, "unmapping an image while unwinding failed");
            }
        }
    }
}

impl Image {
    /// Maps `region` at `origin` (blocking, after `wait`), runs `f` on the mapping, then unmaps
    /// and waits for the unmap (PyOpenCL's `enqueue_map_image`, whose array the caller shapes;
    /// here the mapping reports the row and slice pitch and hands out rows). Works for every
    /// image type.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty `flags`, `WRITE_INVALIDATE_REGION` with `READ` or
    /// `WRITE`, or flags the image's host-access flags forbid; [`Error::Unsupported`] for
    /// `WRITE_INVALIDATE_REGION` before 1.2; coordinates as
    /// [`Image::write`]; [`Error::InvalidArgument`] when the image is already mapped in a
    /// conflicting way; [`Error::Cl`] from `clEnqueueMapImage` or `clEnqueueUnmapMemObject`.
    pub fn map<R>(
        &self,
        queue: &Queue,
        access: MapFlags,
        origin: &[usize],
        region: &[usize],
        wait: &[&Event],
        f: impl FnOnce(&mut ImageMapping<'_>) -> R,
    ) -> Result<R> {
        check_map_flags(self.flags, access)?;
        if access.contains(MapFlags::WRITE_INVALIDATE_REGION) {
            queue
                .context()
                .require_platform_version(Version::V1_2, "CL_MAP_WRITE_INVALIDATE_REGION")?;
        }
        self.check_queue(queue)?;
        let (o, r) = coords(self.extent(), origin, region)?;
        // One writable or many read maps of the image (and of the buffer it was made from);
        // commands of other queues still writing it go first.
        let (claim, extra) = self.tracked().claim_map_whole(queue, writes(access))?;
        let mut list = checked_list(queue, wait)?;
        list.extend(extra.iter().map(Event::as_raw));
        // Enqueued non-blocking under the allocation's map lock and waited for below (see
        // `Tracked::map_command`: PoCL 3.1 crashes on map commands of one buffer running together).
        let mapped = self.tracked().map_command(queue, list, |list| {
            // SAFETY: valid queue/image/events; the pointer is used only after the wait below;
            // the region is inside the image; it is unmapped by `Unmap` before this function
            // returns.
            let m = unsafe {
                raw_queue::enqueue_map_image(
                    queue.as_raw(),
                    self.raw,
                    false,
                    access.bits(),
                    o,
                    r,
                    list,
                )
            }
            .map_err(Error::cl("clEnqueueMapImage"))?;
            // SAFETY: a fresh reference we own.
            let ev = unsafe { Event::from_raw(m.event) };
            Ok((m, ev))
        });
        // The claim goes with an error return.
        let (mapped, map_event) = mapped?;
        let mut guard = Unmap {
            image: self,
            queue,
            ptr: mapped.ptr,
            write: writes(access),
            done: false,
            claim: Some(claim),
        };
        // On failure `guard` unmaps (after the map: an in-order queue) when dropped here.
        map_event.wait()?;
        // No slice is formed over a null pointer a driver might return.
        crate::error::check_aligned_ptr::<u8>("mapped image", mapped.ptr)?;
        let elem = self.element_size;
        let row = mapped.row_pitch.max(r[0] * elem);
        let len = match self.desc.image_type {
            ImageType::Image1d | ImageType::Image1dBuffer | ImageType::Image2d => {
                row * (r[1] - 1) + r[0] * elem
            }
            ImageType::Image1dArray => mapped.slice_pitch.max(row) * (r[1] - 1) + r[0] * elem,
            ImageType::Image2dArray | ImageType::Image3d => {
                mapped.slice_pitch.max(row * r[1]) * (r[2] - 1) + row * (r[1] - 1) + r[0] * elem
            }
        };
        let mut mapping = ImageMapping {
            ptr: mapped.ptr.cast(),
            len,
            row_pitch: mapped.row_pitch,
            slice_pitch: mapped.slice_pitch,
            region: r,
            element_size: elem,
            image_type: self.desc.image_type,
            access,
            _borrow: PhantomData,
        };
        let out = f(&mut mapping);
        guard.unmap()?;
        Ok(out)
    }
}
