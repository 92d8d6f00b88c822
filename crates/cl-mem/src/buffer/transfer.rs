//! Transfers between host memory and buffers and between buffers: byte ranges, rectangles,
//! non-blocking transfers of owned host memory ([`Pending`]), the one entry point
//! [`enqueue_copy`] over (destination, source) pairs, and AMD's peer-to-peer copy.
//!
//! # Host memory and blocking
//!
//! Blocking transfers ([`Buffer::write`], [`Buffer::read`], rectangles through [`Transfer::rect`],
//! [`enqueue_copy`]) borrow host slices: the call returns after the command completed, so the
//! borrow covers the command. Non-blocking transfers ([`Buffer::enqueue_write`],
//! [`Buffer::enqueue_read`]) only take host memory the transfer can own ([`HostMemory`]:
//! `Vec<T>`, `Box<[T]>`, `&'static mut [T]`, [`crate::PinnedMemory`]); it is moved into a
//! [`Pending`] that gives it back from [`Pending::wait`]. Dropping a `Pending` waits for the
//! command; forgetting it (`mem::forget`) leaks the memory, so the command can never read or
//! write freed memory. PyOpenCL's `NannyEvent` keeps the host array alive the same way.
//!
//! A `Pending` is also `IntoFuture` (`pending.await` yields what [`Pending::wait`] yields): the
//! [`PendingFuture`] owns the `Pending`, so the memory stays owned by the transfer until the
//! command's completion callback woke the task; dropping the future before that blocks like
//! dropping the `Pending` (an async caller should await it).
//!
//! # Checked before the driver
//!
//! Every range is checked against both sides (buffer size and host length) with overflow-free
//! arithmetic; rectangles are checked with their pitches (OpenCL's `CL_INVALID_VALUE` rules for
//! pitches, then the last byte each side touches). Queues of another context are refused.

use std::ffi::{c_void, CStr};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use cl_raw::{platform as raw_platform, queue as raw_queue, sys, Version};

use crate::buffer::rect::{Rect, RectPitches};
use crate::buffer::staged::TransferOptions;
use crate::buffer::{AsBuffer, Buffer};
use crate::error::{check_range, Error, Result};
use crate::pod::{slice_as_bytes, slice_as_bytes_mut, Pod};
use crate::raw_handle::RawHandle;
use crate::runtime::event::future::EventFuture;
use crate::runtime::event::Event;
use crate::runtime::platform::Platform;
use crate::runtime::queue::Queue;
use crate::runtime::quirks::quirks;
use crate::runtime::track::{enqueue_tracked, Access, Direction, Read, Write};

/// Host memory a transfer or a `USE_HOST_PTR` buffer may own: its bytes stay at one address
/// when the value is moved, until it is dropped.
///
/// # Safety
///
/// 1. [`HostMemory::host_bytes`] and [`HostMemory::host_bytes_mut`] return the same address
///    and length every time, and moving `self` does not move or free those bytes.
/// 2. The bytes are initialised, and any bytes written into them leave `self` valid.
/// 3. Nothing but the holder of `self` reads or writes those bytes while it lives.
pub unsafe trait HostMemory: Send + 'static {
    /// The bytes.
    fn host_bytes(&self) -> &[u8];
    /// The bytes, writable.
    fn host_bytes_mut(&mut self) -> &mut [u8];
}

// SAFETY: a `Vec`'s heap buffer does not move when the `Vec` is moved, and `T: Pod` accepts any
// bytes; the `Vec` is not grown while owned by a transfer (no `&mut Vec` is handed out).
unsafe impl<T: Pod> HostMemory for Vec<T> {
    fn host_bytes(&self) -> &[u8] {
        slice_as_bytes(self)
    }
    fn host_bytes_mut(&mut self) -> &mut [u8] {
        slice_as_bytes_mut(self)
    }
}

// SAFETY: as for `Vec`: the boxed slice's heap memory does not move with the box.
unsafe impl<T: Pod> HostMemory for Box<[T]> {
    fn host_bytes(&self) -> &[u8] {
        slice_as_bytes(self)
    }
    fn host_bytes_mut(&mut self) -> &mut [u8] {
        slice_as_bytes_mut(self)
    }
}

// SAFETY: a `'static` exclusive borrow is never freed and nothing else may touch it.
unsafe impl<T: Pod> HostMemory for &'static mut [T] {
    fn host_bytes(&self) -> &[u8] {
        slice_as_bytes(self)
    }
    fn host_bytes_mut(&mut self) -> &mut [u8] {
        slice_as_bytes_mut(self)
    }
}

/// A non-blocking transfer in flight and the host memory it owns: PyOpenCL's `NannyEvent`.
///
/// [`Pending::wait`] gives the memory back once the command completed. `Drop` waits for the
/// command before freeing the memory (a failed wait is logged); `mem::forget` leaks it.
#[must_use = "dropping a Pending blocks until the transfer completes; call wait() to get the memory back"]
pub struct Pending<H: HostMemory> {
    event: Event,
    host: ManuallyDrop<H>,
    /// The transfer's queue, so that awaiting can flush it soundly.
    queue: Queue,
}

impl<H: HostMemory> Pending<H> {
    /// The transfer's event (to wait on, to put in other wait lists, to profile).
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Waits for the transfer and returns the host memory.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clWaitForEvents` when the command failed; the memory is then dropped
    /// (the command is over either way).
    pub fn wait(self) -> Result<H> {
        let mut this = ManuallyDrop::new(self);
        let r = this.event.wait();
        // SAFETY: `this` is never used or dropped again; each field is taken exactly once.
        let (event, host, queue) = unsafe {
            (
                std::ptr::read(&this.event),
                ManuallyDrop::take(&mut this.host),
                std::ptr::read(&this.queue),
            )
        };
        drop((event, queue));
        r.map(|()| host)
    }
}

impl<H: HostMemory> Pending<H> {
    /// Wraps a started non-blocking command that reads or writes `host` (for the other memory
    /// modules: images). The caller handed `host`'s bytes to the command.
    pub(crate) fn started(event: Event, host: H, queue: &Queue) -> Pending<H> {
        Pending {
            event,
            host: ManuallyDrop::new(host),
            queue: queue.clone(),
        }
    }
}

impl<H: HostMemory> Drop for Pending<H> {
    fn drop(&mut self) {
        if let Err(e) = self.event.wait() {
            // The command has terminated (an error status is final), so freeing is safe.
            tracing::warn!(error = %e, "a non-blocking transfer failed");
        }
        // SAFETY: the command completed; `host` is dropped exactly once, here.
        unsafe { ManuallyDrop::drop(&mut self.host) }
    }
}

impl<H: HostMemory> IntoFuture for Pending<H> {
    type Output = Result<H>;
    type IntoFuture = PendingFuture<H>;

    /// Awaits the transfer: resolves to the host memory once the command completed, or to
    /// [`Error::CommandFailed`] (the memory is then dropped, as by [`Pending::wait`]).
    fn into_future(self) -> PendingFuture<H> {
        PendingFuture {
            event: self.event.wait_async(),
            pending: Some(self),
            flushed: false,
        }
    }
}

/// The future of a non-blocking transfer (`pending.await`, [`Pending`]'s `IntoFuture`): yields
/// the host memory, as [`Pending::wait`] does, woken by the command's completion callback (see
/// [`EventFuture`]).
///
/// It owns the [`Pending`], so the memory stays with the transfer until the command finished;
/// dropping the future earlier waits for the command (blocking the thread), `mem::forget` leaks.
#[must_use = "futures do nothing unless awaited or polled"]
pub struct PendingFuture<H: HostMemory> {
    event: EventFuture,
    pending: Option<Pending<H>>,
    /// The transfer's queue was flushed (at the first poll that had to wait): a callback, unlike
    /// a blocking wait, does not submit the command, and a driver may keep it on the host.
    flushed: bool,
}

// Nothing in a `PendingFuture` is pinned: `poll` moves the `Pending` out whole, never a pinned
// reference into it, so it is `Unpin` whatever `H` is.
impl<H: HostMemory> Unpin for PendingFuture<H> {}

impl<H: HostMemory> Future for PendingFuture<H> {
    type Output = Result<H>;

    /// # Panics
    ///
    /// When polled again after it resolved (the memory was handed out then).
    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<H>> {
        let this = self.get_mut();
        let done = match Pin::new(&mut this.event).poll(cx) {
            Poll::Pending if this.flushed => return Poll::Pending,
            Poll::Pending => {
                this.flushed = true;
                match this.pending.as_ref().map(|p| p.queue.flush()) {
                    Some(Err(e)) => Err(e),
                    _ => return Poll::Pending,
                }
            }
            Poll::Ready(done) => done,
        };
        let pending = this
            .pending
            .take()
            .expect("PendingFuture polled after it resolved");
        Poll::Ready(match done {
            // The command completed: `wait` returns at once and hands the memory back.
            Ok(()) => pending.wait(),
            Err(e) => {
                // The command is over (an error status is final): dropping frees the memory.
                drop(pending);
                Err(e)
            }
        })
    }
}

impl<H: HostMemory> fmt::Debug for PendingFuture<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingFuture")
            .field("event", self.event.event())
            .field("resolved", &self.pending.is_none())
            .finish()
    }
}

impl<H: HostMemory> fmt::Debug for Pending<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("event", &self.event)
            .field("bytes", &self.host.host_bytes().len())
            .finish()
    }
}

/// Everything about one transfer except its two sides: the events it waits for, byte offsets on
/// each side, how many bytes, a rectangle, and the path (plain or staged). The one options value of
/// [`Buffer::write`], [`Buffer::read`], their non-blocking forms, [`Buffer::fill`], the same
/// on [`Image`](crate::Image) and [`SvmArray`](crate::svm::SvmArray), and [`enqueue_copy`].
/// Plain data passed by value: building one costs no allocation, and the options' `Default`
/// reads the core count once per process.
///
/// `Default` is the whole transfer after no events; a wait list converts into one (`&[]`,
/// `&[&event]`, a `&[&Event]`), so the common call needs no options at all:
///
/// ```ignore
/// buf.write(&queue, &data, &[])?;
/// buf.read(&queue, &mut out, Transfer::default().src_offset(64).wait(&[&ev]))?;
/// buf.write(&queue, &host, Transfer::default().rect(Rect::new([16, 4, 1])))?;
/// ```
///
/// Offsets are in bytes on each side, the host side included (the source of a write, the
/// destination of a read). `byte_count: None` moves what the host side holds past its offset (for
/// buffer-to-buffer copies, the smaller remaining size; for fills, the rest of the buffer). A
/// rectangle carries its own origins and pitches, so it takes no offsets or count (except the
/// buffer side's byte offset of a copy between an image and a buffer). For images the rectangle
/// is in pixels, and without one a transfer covers the whole image.
#[derive(Clone, Copy, Debug, Default)]
pub struct Transfer<'a> {
    /// The events the command waits for.
    pub wait: &'a [&'a Event],
    /// Offset on the source side, in bytes.
    pub src_offset: usize,
    /// Offset on the destination side, in bytes.
    pub dst_offset: usize,
    /// How many bytes; see the type's documentation for `None`.
    pub byte_count: Option<usize>,
    /// A rectangular (up to 3-D) transfer instead of a byte range.
    pub rect: Option<Rect>,
    /// The path of a blocking transfer with the host or of a buffer copy between devices (plain
    /// or through pinned chunks).
    pub options: TransferOptions,
}

impl<'a> Transfer<'a> {
    /// After these events.
    #[must_use]
    pub fn wait(mut self, wait: &'a [&'a Event]) -> Self {
        self.wait = wait;
        self
    }

    /// With this source offset in bytes.
    #[must_use]
    pub fn src_offset(mut self, bytes: usize) -> Self {
        self.src_offset = bytes;
        self
    }

    /// With this destination offset in bytes.
    #[must_use]
    pub fn dst_offset(mut self, bytes: usize) -> Self {
        self.dst_offset = bytes;
        self
    }

    /// Moving this many bytes.
    #[must_use]
    pub fn byte_count(mut self, bytes: usize) -> Self {
        self.byte_count = Some(bytes);
        self
    }

    /// As this rectangle.
    #[must_use]
    pub fn rect(mut self, rect: Rect) -> Self {
        self.rect = Some(rect);
        self
    }

    /// On the path `options` chooses (blocking transfers with the host, buffer copies between
    /// devices).
    #[must_use]
    pub fn options(mut self, options: TransferOptions) -> Self {
        self.options = options;
        self
    }

    /// Refuses offsets and a count next to a rectangle, which carries its own.
    fn rect_alone(&self) -> Result<Option<Rect>> {
        if self.rect.is_some()
            && (self.src_offset != 0 || self.dst_offset != 0 || self.byte_count.is_some())
        {
            return Err(Error::InvalidArgument(
                "a rectangle transfer takes its origins from the rectangle: no offsets or byte \
                 count"
                    .into(),
            ));
        }
        Ok(self.rect)
    }

    /// Refuses a rectangle where `what` has none.
    pub(crate) fn no_rect(&self, what: &str) -> Result<()> {
        if self.rect.is_some() {
            return Err(Error::InvalidArgument(format!("{what} takes no rectangle")));
        }
        Ok(())
    }

    /// The byte range a fill (`what`) of an object of `size` bytes covers: `dst_offset` and
    /// `byte_count` (default: the rest). Refuses a rectangle and a source offset (the pattern is
    /// the source).
    pub(crate) fn fill_range(&self, what: &str, size: usize) -> Result<(usize, usize)> {
        self.no_rect(what)?;
        if self.src_offset != 0 {
            return Err(Error::InvalidArgument(
                "a fill has no source offset (the pattern is the source)".into(),
            ));
        }
        let count = self
            .byte_count
            .unwrap_or_else(|| size.saturating_sub(self.dst_offset));
        Ok((self.dst_offset, count))
    }
}

/// The public host transfers of a memory type ([`Buffer`], [`Image`](crate::Image), [`SvmArray`](
/// crate::svm::SvmArray), [`SvmBufferView`](crate::svm::SvmBufferView)), each signature written
/// once here so that every type takes the same arguments: `write` from [`HostData`], `read` into
/// [`HostDataMut`], `fill` with a [`HostData`] pattern, `enqueue_write` and `enqueue_read` of
/// [`HostMemory`] through a [`Pending`]. Each method's docs and body are the type's (`self`, the
/// queue, the host side and the options are named at the call: `write(self, queue, src, o)`);
/// the body sees the options `o` already as a [`Transfer`].
macro_rules! host_transfers {
    ($($(#[$doc:meta])* $kind:ident($self:tt, $q:ident, $host:ident, $o:ident) $body:block)+) => {
        $($crate::buffer::transfer::host_transfers!(
            @$kind $(#[$doc])* ($self, $q, $host, $o) $body
        );)+
    };
    (@write $(#[$doc:meta])* ($self:tt, $q:ident, $src:ident, $o:ident) $body:block) => {
        $(#[$doc])*
        pub fn write<'a, S: $crate::buffer::transfer::HostData + ?Sized>(
            &$self,
            $q: &$crate::runtime::queue::Queue,
            $src: &S,
            $o: impl Into<$crate::buffer::transfer::Transfer<'a>>,
        ) -> $crate::error::Result<$crate::runtime::event::Event> {
            let $o = $o.into();
            $body
        }
    };
    (@read $(#[$doc:meta])* ($self:tt, $q:ident, $dst:ident, $o:ident) $body:block) => {
        $(#[$doc])*
        pub fn read<'a, D: $crate::buffer::transfer::HostDataMut + ?Sized>(
            &$self,
            $q: &$crate::runtime::queue::Queue,
            $dst: &mut D,
            $o: impl Into<$crate::buffer::transfer::Transfer<'a>>,
        ) -> $crate::error::Result<$crate::runtime::event::Event> {
            let $o = $o.into();
            $body
        }
    };
    (@enqueue_write $(#[$doc:meta])* ($self:tt, $q:ident, $host:ident, $o:ident) $body:block) => {
        $(#[$doc])*
        pub fn enqueue_write<'a, H: $crate::buffer::transfer::HostMemory>(
            &$self,
            $q: &$crate::runtime::queue::Queue,
            $host: H,
            $o: impl Into<$crate::buffer::transfer::Transfer<'a>>,
        ) -> $crate::error::Result<$crate::buffer::transfer::Pending<H>> {
            let $o = $o.into();
            $body
        }
    };
    (@enqueue_read $(#[$doc:meta])* ($self:tt, $q:ident, $host:ident, $o:ident) $body:block) => {
        $(#[$doc])*
        pub fn enqueue_read<'a, H: $crate::buffer::transfer::HostMemory>(
            &$self,
            $q: &$crate::runtime::queue::Queue,
            mut $host: H,
            $o: impl Into<$crate::buffer::transfer::Transfer<'a>>,
        ) -> $crate::error::Result<$crate::buffer::transfer::Pending<H>> {
            let $o = $o.into();
            $body
        }
    };
    (@fill $(#[$doc:meta])* ($self:tt, $q:ident, $pattern:ident, $o:ident) $body:block) => {
        $(#[$doc])*
        pub fn fill<'a, P: $crate::buffer::transfer::HostData + ?Sized>(
            &$self,
            $q: &$crate::runtime::queue::Queue,
            $pattern: &P,
            $o: impl Into<$crate::buffer::transfer::Transfer<'a>>,
        ) -> $crate::error::Result<$crate::runtime::event::Event> {
            let $o = $o.into();
            $body
        }
    };
}
pub(crate) use host_transfers;

impl Transfer<'_> {
    /// The bytes of a write's source that `src_offset` and `byte_count` pick (by default, from
    /// `src_offset` to the end).
    pub(crate) fn src_part<'h>(&self, src: &'h [u8]) -> Result<&'h [u8]> {
        let (a, b) = host_range(src.len(), self.src_offset, self.byte_count)?;
        Ok(&src[a..b])
    }

    /// The bytes of a read's destination that `dst_offset` and `byte_count` pick (by default,
    /// from `dst_offset` to the end).
    pub(crate) fn dst_part<'h>(&self, dst: &'h mut [u8]) -> Result<&'h mut [u8]> {
        let (a, b) = host_range(dst.len(), self.dst_offset, self.byte_count)?;
        Ok(&mut dst[a..b])
    }
}

impl<'a> From<&'a [&'a Event]> for Transfer<'a> {
    fn from(wait: &'a [&'a Event]) -> Self {
        Transfer {
            wait,
            ..Transfer::default()
        }
    }
}

impl<'a, const N: usize> From<&'a [&'a Event; N]> for Transfer<'a> {
    fn from(wait: &'a [&'a Event; N]) -> Self {
        Transfer {
            wait,
            ..Transfer::default()
        }
    }
}

impl<'a> From<&'a Vec<&'a Event>> for Transfer<'a> {
    fn from(wait: &'a Vec<&'a Event>) -> Self {
        Transfer {
            wait,
            ..Transfer::default()
        }
    }
}

/// Host memory a blocking transfer reads: a slice, array or vector of [`Pod`] values,
/// [`crate::PinnedMemory`], or (feature `ndarray`) a contiguous array in its memory order.
pub trait HostData {
    /// The bytes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a strided (non-contiguous) array.
    fn host_slice(&self) -> Result<&[u8]>;
}

/// Host memory a blocking transfer writes; see [`HostData`].
pub trait HostDataMut {
    /// The bytes, writable.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a strided (non-contiguous) array.
    fn host_slice_mut(&mut self) -> Result<&mut [u8]>;
}

impl<T: Pod> HostData for [T] {
    fn host_slice(&self) -> Result<&[u8]> {
        Ok(slice_as_bytes(self))
    }
}

impl<T: Pod> HostDataMut for [T] {
    fn host_slice_mut(&mut self) -> Result<&mut [u8]> {
        Ok(slice_as_bytes_mut(self))
    }
}

impl<T: Pod, const N: usize> HostData for [T; N] {
    fn host_slice(&self) -> Result<&[u8]> {
        Ok(slice_as_bytes(self))
    }
}

impl<T: Pod, const N: usize> HostDataMut for [T; N] {
    fn host_slice_mut(&mut self) -> Result<&mut [u8]> {
        Ok(slice_as_bytes_mut(self))
    }
}

impl<T: Pod> HostData for Vec<T> {
    fn host_slice(&self) -> Result<&[u8]> {
        Ok(slice_as_bytes(self))
    }
}

impl<T: Pod> HostDataMut for Vec<T> {
    fn host_slice_mut(&mut self) -> Result<&mut [u8]> {
        Ok(slice_as_bytes_mut(self))
    }
}

impl<T: Pod> HostData for crate::buffer::host::PinnedMemory<T> {
    fn host_slice(&self) -> Result<&[u8]> {
        Ok(slice_as_bytes(self))
    }
}

impl<T: Pod> HostDataMut for crate::buffer::host::PinnedMemory<T> {
    fn host_slice_mut(&mut self) -> Result<&mut [u8]> {
        Ok(slice_as_bytes_mut(self))
    }
}

impl Buffer {
    host_transfers! {
        /// Blocking host-to-device transfer of `src` (a slice, vector, array, pinned memory or
        /// contiguous ndarray: [`HostData`]) into the buffer, after `o`'s events: at `o.dst_offset`
        /// (`o.src_offset` and `o.byte_count` pick part of `src`), or as `o.rect` (the host is the
        /// rectangle's source side). Large transfers to a discrete GPU go through pinned chunks
        /// unless `o.options` says otherwise ([`TransferOptions`]). Nothing to move returns a
        /// marker event.
        ///
        /// ```ignore
        /// buf.write(&queue, &data, &[])?;
        /// buf.write(&queue, &data, Transfer::default().dst_offset(64).wait(&[&ev]))?;
        /// ```
        ///
        /// # Errors
        ///
        /// Checked first: [`Error::OutOfBounds`] past the end of either side,
        /// [`Error::InvalidArgument`] for a queue of another context, a strided array, options the
        /// path cannot take, or a rectangle next to offsets; rectangles as [`Rect`] describes. Then
        /// [`Error::Cl`] from `clEnqueueWriteBuffer` (`clEnqueueWriteBufferRect`).
        write(self, queue, src, o) {
            let bytes = src.host_slice()?;
            if let Some(rect) = o.rect_alone()? {
                return self.write_rect_with(queue, &rect, bytes, o.wait, o.options);
            }
            self.write_bytes_with(queue, o.dst_offset, o.src_part(bytes)?, o.wait, o.options)
        }

        /// Blocking device-to-host transfer into `dst` ([`HostDataMut`]) from the buffer, after
        /// `o`'s events: from `o.src_offset` (`o.dst_offset` and `o.byte_count` pick part of
        /// `dst`), or as `o.rect` (the host is the rectangle's destination side).
        /// [`Buffer::to_vec`] reads the whole buffer into a new vector.
        ///
        /// # Errors
        ///
        /// As [`Buffer::write`], with `clEnqueueReadBuffer` (`clEnqueueReadBufferRect`).
        read(self, queue, dst, o) {
            let bytes = dst.host_slice_mut()?;
            if let Some(rect) = o.rect_alone()? {
                return self.read_rect_with(queue, &rect, bytes, o.wait, o.options);
            }
            self.read_bytes_with(queue, o.src_offset, o.dst_part(bytes)?, o.wait, o.options)
        }

        /// Non-blocking host-to-device transfer of `host` ([`HostMemory`]: owned or `'static`
        /// memory), placed as [`Buffer::write`] places it (`o.dst_offset`, part of `host` by
        /// `o.src_offset` and `o.byte_count`, or `o.rect`); `o.options` does not apply (one plain
        /// command). The memory is owned by the returned [`Pending`] until the command completes.
        ///
        /// # Errors
        ///
        /// As [`Buffer::write`] (all checked first; `host` is dropped on error), and
        /// [`Error::InvalidArgument`] for a transfer of 0 bytes.
        enqueue_write(self, queue, host, o) {
            let bytes = host.host_bytes();
            let event = if let Some(rect) = o.rect_alone()? {
                let p = self.check_host_rect(queue, false, &rect, bytes.len())?;
                // SAFETY: checked for this queue, `rect` and `bytes.len()`; the host bytes stay
                // valid and unmoved until the event completes (moved into the `Pending`, HostMemory
                // contract 1).
                unsafe {
                    self.enqueue_rect_host::<Write>(
                        queue,
                        false,
                        &rect,
                        p,
                        bytes.as_ptr().cast(),
                        o.wait,
                    )
                }?
            } else {
                let bytes = o.src_part(bytes)?;
                // SAFETY: the bytes stay valid and unmoved until the event completes because `host`
                // moves into the `Pending`, whose drop waits and whose forgetting leaks (HostMemory
                // contract 1).
                unsafe {
                    self.enqueue_bytes::<Write>(
                        queue,
                        false,
                        o.dst_offset,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        o.wait,
                    )
                }?
            };
            Ok(Pending::started(event, host, queue))
        }

        /// Non-blocking device-to-host transfer into `host`, placed as [`Buffer::read`] places it;
        /// [`Pending::wait`] returns the filled memory.
        ///
        /// # Errors
        ///
        /// As [`Buffer::enqueue_write`], with `clEnqueueReadBuffer` (`clEnqueueReadBufferRect`).
        enqueue_read(self, queue, host, o) {
            let bytes = host.host_bytes_mut();
            let event = if let Some(rect) = o.rect_alone()? {
                let p = self.check_host_rect(queue, true, &rect, bytes.len())?;
                let ptr = bytes.as_mut_ptr();
                // SAFETY: as in `enqueue_write`; nothing else touches the bytes until the event
                // completes.
                unsafe {
                    self.enqueue_rect_host::<Read>(queue, false, &rect, p, ptr.cast(), o.wait)
                }?
            } else {
                let bytes = o.dst_part(bytes)?;
                let (ptr, len) = (bytes.as_mut_ptr(), bytes.len());
                // SAFETY: as in `enqueue_write`; nothing reads or writes the bytes until the event
                // completes (the `Pending` owns them and only hands them out after waiting).
                unsafe {
                    self.enqueue_bytes::<Read>(queue, false, o.src_offset, ptr.cast(), len, o.wait)
                }?
            };
            Ok(Pending::started(event, host, queue))
        }
    }

    /// Device-to-device copy of `byte_count` bytes from `src` at `src_offset` to `self` at
    /// `dst_offset` (behind [`enqueue_copy`] of two buffers). `None` copies the smaller of the
    /// two remaining sizes (`min(src.size - src_offset, dst.size - dst_offset)`); PyOpenCL
    /// documents `min(src, dst)` but reads the source's size twice, so its default overruns a
    /// smaller destination (reference §9.1).
    ///
    /// The path is the one `o.options` chooses: [`TransferPath::Plain`](crate::TransferPath::Plain)
    /// is the driver's one `clEnqueueCopyBuffer`; [`TransferPath::Staged`](crate::TransferPath::Staged)
    /// reads a source whose bytes live on another device of the context (the device of its last
    /// write or migration) into pinned chunks on a queue of that device and writes them on
    /// `queue`, pipelined (`crate::buffer::between`); [`TransferPath::Auto`](crate::TransferPath::Auto)
    /// stages between two devices where the platform's own path is slow. Options the path cannot
    /// take are an [`Error::InvalidArgument`]; a staged copy that fails mid-way returns the first
    /// error, and the chunk commands already enqueued stay recorded (later commands and maps
    /// wait for them).
    ///
    /// # Errors
    ///
    /// Checked first: [`Error::OutOfBounds`] on either side, [`Error::InvalidArgument`] for a
    /// queue of another context or overlapping ranges of one buffer (the driver's
    /// `CL_MEM_COPY_OVERLAP`). Then [`Error::Cl`] from `clEnqueueCopyBuffer`. A zero count
    /// returns a marker event.
    pub(crate) fn copy_range(
        &self,
        queue: &Queue,
        src: &Buffer,
        o: &Transfer<'_>,
    ) -> Result<Event> {
        let (src_offset, dst_offset, byte_count, wait) =
            (o.src_offset, o.dst_offset, o.byte_count, o.wait);
        let count = match byte_count {
            Some(n) => n,
            None => src
                .size_bytes()
                .saturating_sub(src_offset)
                .min(self.size_bytes().saturating_sub(dst_offset)),
        };
        src.check_range("copy source", src_offset, count)?;
        self.check_range("copy destination", dst_offset, count)?;
        self.check_queue(queue)?;
        src.check_queue(queue)?;
        check_no_overlap(src, src_offset, self, dst_offset, count)?;
        if count == 0 {
            return queue.enqueue_marker(wait);
        }
        if let Some(ev) = super::between::copy_staged(
            queue, src, src_offset, self, dst_offset, count, wait, &o.options,
        )? {
            return Ok(ev);
        }
        let uses = [
            (src.tracked(), Some((src_offset, count)), Access::Read),
            (self.tracked(), Some((dst_offset, count)), Access::Write),
        ];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/buffers/events of one context; both ranges in bounds and not
            // overlapping; we own the event.
            unsafe {
                let ev = raw_queue::enqueue_copy_buffer(
                    queue.as_raw(),
                    src.as_raw(),
                    self.as_raw(),
                    src_offset,
                    dst_offset,
                    count,
                    list,
                );
                Event::adopt(ev, "clEnqueueCopyBuffer")
            }
        })
    }
    /// The checks every host rectangle transfer runs before the driver, in this order: the
    /// source side of `rect`, then its destination side (the host is the source of a write and
    /// the destination of a read, `host_len` bytes long), the queue's context, the buffer's
    /// host-access flags, and OpenCL 1.1.
    pub(crate) fn check_host_rect(
        &self,
        queue: &Queue,
        reading: bool,
        rect: &Rect,
        host_len: usize,
    ) -> Result<RectPitches> {
        let (host, buffer, call) = if reading {
            let buffer = rect.side(
                "buffer rectangle",
                rect.src_origin,
                rect.src_pitches,
                self.size_bytes(),
            )?;
            let host = rect.side(
                "host rectangle",
                rect.dst_origin,
                rect.dst_pitches,
                host_len,
            )?;
            (host, buffer, "clEnqueueReadBufferRect")
        } else {
            let host = rect.side(
                "host rectangle",
                rect.src_origin,
                rect.src_pitches,
                host_len,
            )?;
            let buffer = rect.side(
                "buffer rectangle",
                rect.dst_origin,
                rect.dst_pitches,
                self.size_bytes(),
            )?;
            (host, buffer, "clEnqueueWriteBufferRect")
        };
        self.check_queue(queue)?;
        self.info.flags.check_host_access(reading, "a buffer")?;
        queue
            .context()
            .require_platform_version(Version::V1_1, call)?;
        Ok(RectPitches { host, buffer })
    }

    /// `clEnqueueReadBufferRect` (`D` = `Read`, into `host`) or `clEnqueueWriteBufferRect`
    /// (`D` = `Write`, from `host`) of a checked `rect`: the one call behind rectangle reads and
    /// writes of [`Buffer::read`], [`Buffer::write`], their `enqueue_` forms and the staged paths.
    ///
    /// # Safety
    ///
    /// 1. `p` came from [`Buffer::check_host_rect`] for this direction, `queue`, `rect` and a host
    ///    length `n`, and `host` is valid for `n` bytes of writes (a read) or reads (a write).
    /// 2. Nothing else accesses those bytes until the command completes (when `blocking`: until
    ///    this call returns); a write only needs them not written.
    pub(crate) unsafe fn enqueue_rect_host<D: Direction>(
        &self,
        queue: &Queue,
        blocking: bool,
        rect: &Rect,
        p: RectPitches,
        host: D::Host,
        wait: &[&Event],
    ) -> Result<Event> {
        let (call, raw) = D::BUFFER_RECT;
        // The buffer's side is the source of a read and the destination of a write.
        let (buffer_origin, host_origin) = match D::ACCESS {
            Access::Read => (rect.src_origin, rect.dst_origin),
            Access::Write => (rect.dst_origin, rect.src_origin),
        };
        let uses = [(self.tracked(), None, D::ACCESS)];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/buffer/events of one context (checked); both rectangles are inside
            // their memory (checked, obligation 1); obligation 2 keeps the host bytes to the
            // command; we own the event.
            unsafe {
                let ev = raw(
                    queue.as_raw(),
                    self.as_raw(),
                    blocking,
                    buffer_origin,
                    host_origin,
                    rect.region,
                    p.buffer,
                    p.host,
                    host,
                    list,
                );
                Event::adopt(ev, call)
            }
        })
        .and_then(|ev| ev.finished_if(blocking))
    }

    /// Rectangular device-to-device copy from `src` into `self` (`clEnqueueCopyBufferRect`).
    ///
    /// # Errors
    ///
    /// As a rectangle [`Buffer::write`]; within one buffer the pitches of both sides must be equal
    /// (OpenCL's rule), and rectangles that share a byte of one allocation (the spec's
    /// `CL_MEM_COPY_OVERLAP`, here also across sub-buffers of one root) are
    /// [`Error::InvalidArgument`], both checked first.
    pub(crate) fn copy_rect_from(
        &self,
        queue: &Queue,
        src: &Buffer,
        rect: &Rect,
        wait: &[&Event],
    ) -> Result<Event> {
        let sp = rect.side(
            "source rectangle",
            rect.src_origin,
            rect.src_pitches,
            src.size_bytes(),
        )?;
        let dp = rect.side(
            "destination rectangle",
            rect.dst_origin,
            rect.dst_pitches,
            self.size_bytes(),
        )?;
        self.check_queue(queue)?;
        src.check_queue(queue)?;
        if src == self && sp != dp {
            return Err(Error::InvalidArgument(
                "a rectangular copy within one buffer needs equal source and destination pitches"
                    .into(),
            ));
        }
        if same_memory(src, self) {
            let first =
                |origin: [usize; 3], p: [usize; 2]| origin[2] * p[1] + origin[1] * p[0] + origin[0];
            let a = src.origin_bytes() + first(rect.src_origin, sp);
            let b = self.origin_bytes() + first(rect.dst_origin, dp);
            if rects_overlap(rect.region, (a, sp), (b, dp)) {
                return Err(Error::InvalidArgument(format!(
                    "the source and destination rectangles overlap in one buffer ({:?} at byte {a} and byte {b}; CL_MEM_COPY_OVERLAP)",
                    rect.region
                )));
            }
        }
        queue
            .context()
            .require_platform_version(Version::V1_1, "clEnqueueCopyBufferRect")?;
        let uses = [
            (src.tracked(), None, Access::Read),
            (self.tracked(), None, Access::Write),
        ];
        // PoCL crashes on a sub-buffer here: the same bytes, named from the roots.
        let (src_mem, dst_mem, src_origin, dst_origin) = if (src.parent().is_some()
            || self.parent().is_some())
            && quirks(&queue.context().platform()).copy_rect_sub_buffer_crashes
        {
            let root = |b: &Buffer| b.parent().map_or(b.as_raw(), Buffer::as_raw);
            // The origin moved by the sub-buffer's offset, carried into rows and slices so that
            // `x < row pitch` and `y < rows per slice` (the driver's overlap check assumes both).
            let shift = |o: [usize; 3], by: usize, [row, slice]: [usize; 2]| {
                let x = o[0] + by;
                let y = o[1] + x / row;
                let per_slice = slice / row;
                [x % row, y % per_slice, o[2] + y / per_slice]
            };
            (
                root(src),
                root(self),
                shift(rect.src_origin, src.origin_bytes(), sp),
                shift(rect.dst_origin, self.origin_bytes(), dp),
            )
        } else {
            (
                src.as_raw(),
                self.as_raw(),
                rect.src_origin,
                rect.dst_origin,
            )
        };
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/buffers/events of one context; both rectangles in bounds (of a
            // root, the same bytes as of its sub-buffer); we own the event.
            unsafe {
                let ev = raw_queue::enqueue_copy_buffer_rect(
                    queue.as_raw(),
                    src_mem,
                    dst_mem,
                    src_origin,
                    dst_origin,
                    rect.region,
                    sp,
                    dp,
                    list,
                );
                Event::adopt(ev, "clEnqueueCopyBufferRect")
            }
        })
    }
}

/// Whether two rectangles of one allocation share a byte: each is `region` (bytes per row, rows,
/// slices) starting at byte `base` with pitches `[row, slice]`. Exact; the rows are compared only
/// when the two rectangles' byte spans intersect.
fn rects_overlap(region: [usize; 3], a: (usize, [usize; 2]), b: (usize, [usize; 2])) -> bool {
    let [w, rows, slices] = region;
    let end = |(base, p): (usize, [usize; 2])| base + (slices - 1) * p[1] + (rows - 1) * p[0] + w;
    if a.0 >= end(b) || b.0 >= end(a) {
        return false;
    }
    let (b_row, b_slice) = (b.1[0], b.1[1]);
    // The slices of `b` whose byte span meets a row `[s, s + w)`: a range found in O(1), so the
    // check costs one step per row of `a` (a whole 3-D region within one buffer stays cheap).
    let b_span = (rows - 1) * b_row + w;
    let slices_meeting = |s: usize| {
        let first = (s + 1)
            .checked_sub(b.0 + b_span)
            .map_or(0, |d| d.div_ceil(b_slice.max(1)));
        let last = (s + w - 1)
            .checked_sub(b.0)
            .map_or(0, |d| d / b_slice.max(1) + 1)
            .min(slices);
        first..last
    };
    for az in 0..slices {
        for ay in 0..rows {
            // Row [s, s + w) of `a` against the rows of each slice of `b` it can meet.
            let s = a.0 + az * a.1[1] + ay * a.1[0];
            for bz in slices_meeting(s) {
                let base = b.0 + bz * b_slice;
                if base >= s + w {
                    continue;
                }
                // The first row of this slice that ends after `s` (rows grow with y).
                let y = if base + w > s {
                    0
                } else {
                    (s - w - base) / b_row + 1
                };
                if y < rows && base + y * b_row < s + w {
                    return true;
                }
            }
        }
    }
    false
}

/// Refuses `count` bytes copied from `src` at `src_offset` into `dst` at `dst_offset` when they
/// share a byte of one allocation (the spec's `CL_MEM_COPY_OVERLAP`).
fn check_no_overlap(
    src: &Buffer,
    src_offset: usize,
    dst: &Buffer,
    dst_offset: usize,
    count: usize,
) -> Result<()> {
    let (a, b) = (
        src.origin_bytes() + src_offset,
        dst.origin_bytes() + dst_offset,
    );
    if count > 0 && same_memory(src, dst) && a < b + count && b < a + count {
        return Err(Error::InvalidArgument(format!(
            "copy ranges overlap in one buffer (source at {a}, destination at {b}, {count} bytes)"
        )));
    }
    Ok(())
}

/// True when both buffers are views of the same root memory.
fn same_memory(a: &Buffer, b: &Buffer) -> bool {
    let root = |x: &Buffer| x.parent().map_or(x.as_raw(), Buffer::as_raw);
    root(a) == root(b)
}

/// A (destination, source) pair [`enqueue_copy`] can transfer between: buffer from buffer,
/// buffer from host memory ([`HostData`]), host memory ([`HostDataMut`]) from buffer (the image
/// and SVM modules add their pairs). Host to host is deliberately absent, so it does not compile
/// (PyOpenCL raises `TypeError` at run time).
#[diagnostic::on_unimplemented(
    message = "`enqueue_copy` has no transfer for (destination, source) = `{Self}`",
    label = "no transfer between this destination and source",
    note = "host-to-host copies are not transfers: use `copy_from_slice`; the supported pairs are the implementors of `CopyPair`"
)]
pub trait CopyPair {
    /// Enqueues the blocking transfer (or device copy).
    ///
    /// # Errors
    ///
    /// As the method it forwards to.
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event>;
}

/// Copies `src` into `dst`, whatever pair the spec allows, like PyOpenCL's `enqueue_copy`:
/// `enqueue_copy(&q, &dst_buf, &src_buf, &[])`, `enqueue_copy(&q, &buf, &host[..], &[])`,
/// `enqueue_copy(&q, &mut host[..], &buf, &[])`, images and SVM too; offsets, a byte count or a
/// rectangle come in the [`Transfer`]. Transfers with the host are blocking (the slices are
/// borrowed); use [`Buffer::enqueue_write`]/[`Buffer::enqueue_read`] for non-blocking ones.
///
/// # Errors
///
/// [`Error::OutOfBounds`] when the count does not fit either side, [`Error::InvalidArgument`]
/// for a queue of another context or options the pair does not take (checked first);
/// [`Error::Cl`] from the driver call.
pub fn enqueue_copy<'a, D, S>(
    queue: &Queue,
    dst: D,
    src: S,
    o: impl Into<Transfer<'a>>,
) -> Result<Event>
where
    (D, S): CopyPair,
{
    (dst, src).enqueue(queue, o.into())
}

impl<D: AsBuffer + ?Sized, S: AsBuffer + ?Sized> CopyPair for (&D, &S) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        let (dst, src) = (self.0.as_buffer(), self.1.as_buffer());
        if let Some(rect) = o.rect_alone()? {
            return dst.copy_rect_from(queue, src, &rect, o.wait);
        }
        dst.copy_range(queue, src, &o)
    }
}

/// The host byte range of a transfer.
pub(crate) fn host_range(
    len: usize,
    offset: usize,
    count: Option<usize>,
) -> Result<(usize, usize)> {
    let count = count.unwrap_or_else(|| len.saturating_sub(offset));
    check_range("host slice", offset, count, len)?;
    // No overflow: checked above.
    Ok((offset, offset + count))
}

/// Buffer from host memory ([`Buffer::write`]) and host memory from buffer ([`Buffer::read`]),
/// for each host type of [`HostData`] (one impl per type: a generic one would overlap the
/// buffer pair).
macro_rules! host_pairs {
    ($( [$($g:tt)*] $host:ty ),* $(,)?) => {$(
        impl<D: AsBuffer + ?Sized, $($g)*> CopyPair for (&D, &$host) {
            fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
                self.0.as_buffer().write(queue, self.1, o)
            }
        }

        impl<S: AsBuffer + ?Sized, $($g)*> CopyPair for (&mut $host, &S) {
            fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
                self.1.as_buffer().read(queue, self.0, o)
            }
        }
    )*};
}

host_pairs!(
    [T: Pod] [T],
    [T: Pod, const N: usize] [T; N],
    [T: Pod] Vec<T>,
    [T: Pod] crate::buffer::host::PinnedMemory<T>,
);

/// `clEnqueueCopyBufferP2PAMD`, from `cl_amd_copy_buffer_p2p`.
type P2pFn = unsafe extern "C" fn(
    sys::cl_command_queue,
    sys::cl_mem,
    sys::cl_mem,
    usize,
    usize,
    usize,
    sys::cl_uint,
    *const sys::cl_event,
    *mut sys::cl_event,
) -> sys::cl_int;

/// AMD's peer-to-peer copy between buffers of two contexts (`clEnqueueCopyBufferP2PAMD` of
/// `cl_amd_copy_buffer_p2p`), found through the platform's extension-function lookup:
/// PyOpenCL's `enqueue_copy_buffer_p2p_amd`. `byte_count: None` copies `min(src, dst)` bytes.
///
/// The copy goes through both buffers' command records, as every copy does: it is refused while
/// the host maps bytes it touches, and it is ordered after other queues' pending commands on both
/// buffers. A destination of another context cannot be ordered by this queue's events, so then the
/// call waits on the host for the destination's pending commands first and for the copy before it
/// returns.
///
/// # Errors
///
/// [`Error::Unsupported`] when the platform is older than 1.2 or has no such function (checked
/// before any command); [`Error::OutOfBounds`] when the count exceeds either buffer;
/// [`Error::InvalidArgument`] when `src` is not of the queue's context or the ranges overlap in
/// one allocation; [`Error::Mapped`] under a live map; [`Error::Cl`] from the call.
pub fn enqueue_copy_buffer_p2p_amd(
    platform: Platform,
    queue: &Queue,
    src: &Buffer,
    dst: &Buffer,
    byte_count: Option<usize>,
    wait: &[&Event],
) -> Result<Event> {
    platform.require_version(Version::V1_2, "clGetExtensionFunctionAddressForPlatform")?;
    let count = byte_count.unwrap_or_else(|| src.size_bytes().min(dst.size_bytes()));
    src.check_range("p2p copy source", 0, count)?;
    dst.check_range("p2p copy destination", 0, count)?;
    src.check_queue(queue)?;
    check_no_overlap(src, 0, dst, 0, count)?;
    let name: &CStr = c"clEnqueueCopyBufferP2PAMD";
    // SAFETY: a platform id of a 1.2+ platform; the address is only transmuted to the
    // signature `cl_amd_copy_buffer_p2p` specifies.
    let Some(addr) =
        (unsafe { raw_platform::get_extension_function_address(platform.as_raw(), name) })
    else {
        return Err(Error::Unsupported {
            feature: "clEnqueueCopyBufferP2PAMD",
            needs: "the cl_amd_copy_buffer_p2p extension, which this platform lacks".into(),
        });
    };
    // SAFETY: the driver returned this function under this name; its C signature is `P2pFn`.
    let f: P2pFn = unsafe { std::mem::transmute::<*mut c_void, P2pFn>(addr) };
    let p2p = |list: &[sys::cl_event]| -> Result<Event> {
        let n = u32::try_from(list.len())
            .map_err(|_| Error::InvalidArgument("too many events in a wait list".into()))?;
        let mut ev: sys::cl_event = std::ptr::null_mut();
        // SAFETY: valid queue, buffers and events (checked or recorded for the queue's context);
        // ranges in bounds; `ev` is a live out-parameter and the wait list is null exactly when
        // empty.
        let status = unsafe {
            f(
                queue.as_raw(),
                src.as_raw(),
                dst.as_raw(),
                0,
                0,
                count,
                n,
                if list.is_empty() {
                    std::ptr::null()
                } else {
                    list.as_ptr()
                },
                &mut ev,
            )
        };
        cl_raw::check(status).map_err(Error::cl("clEnqueueCopyBufferP2PAMD"))?;
        // SAFETY: a fresh reference we own.
        Ok(unsafe { Event::from_raw(ev) })
    };
    let read = (src.tracked(), Some((0, count)), Access::Read);
    let write = (dst.tracked(), Some((0, count)), Access::Write);
    if dst.context() == queue.context() {
        return enqueue_tracked(queue, wait, &[read, write], p2p);
    }
    // The destination's record holds events of its own context only: hold its bytes against maps,
    // let its pending commands finish, and finish the copy before the hold ends.
    let (claim, waits) = dst
        .tracked()
        .before(queue, Some((0, count)), Access::Write)?;
    for w in &waits {
        w.wait()?;
    }
    let ev = enqueue_tracked(queue, wait, &[read], p2p)?;
    ev.wait()?;
    drop(claim);
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rectangles_overlap_exactly() {
        // Two 4x4 tiles of a 16-byte-pitch image: side by side, they share no byte.
        assert!(!rects_overlap([4, 4, 1], (0, [16, 64]), (4, [16, 64])));
        assert!(rects_overlap([4, 4, 1], (0, [16, 64]), (3, [16, 64])));
        // One row down: rows 1..4 of `a` are rows 0..3 of `b`.
        assert!(rects_overlap([4, 4, 1], (0, [16, 64]), (16, [16, 64])));
        // Interleaved rows of different pitches: `a` rows at 0, 32, 64; `b` rows at 16, 48, 80.
        assert!(!rects_overlap([8, 3, 1], (0, [32, 96]), (16, [32, 96])));
        assert!(rects_overlap([8, 3, 1], (0, [32, 96]), (12, [24, 72])));
        // Disjoint spans, and slices: the second slice of `a` meets the first of `b`.
        assert!(!rects_overlap([4, 2, 1], (0, [8, 16]), (100, [8, 16])));
        assert!(rects_overlap([4, 2, 2], (0, [8, 64]), (64, [8, 64])));
        assert!(!rects_overlap([4, 2, 2], (0, [8, 64]), (32, [8, 64])));
        // The second slice of `b` meets the last row of `a`'s first slice only.
        assert!(rects_overlap([4, 4, 3], (0, [16, 256]), (40, [16, 8])));
        assert!(!rects_overlap([4, 4, 3], (0, [16, 256]), (36, [16, 4])));
        // A whole 512^3-row region moved by one byte within one buffer: found at once.
        assert!(rects_overlap(
            [512, 512, 512],
            (0, [512, 512 * 512]),
            (1, [512, 512 * 512])
        ));
        // Interleaved rows that never meet: every row checked, each against its one slice.
        assert!(!rects_overlap(
            [4, 256, 256],
            (0, [8, 2048]),
            (4, [8, 2048])
        ));
    }

    /// Against a byte-by-byte check of small rectangles with pseudo-random layouts.
    #[test]
    fn rectangles_overlap_as_bytes_do() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            usize::try_from(x % m as u64).unwrap_or(0)
        };
        let bytes = |region: [usize; 3], (base, p): (usize, [usize; 2])| {
            let mut v = Vec::new();
            for z in 0..region[2] {
                for y in 0..region[1] {
                    v.extend((0..region[0]).map(|i| base + z * p[1] + y * p[0] + i));
                }
            }
            v
        };
        for _ in 0..3000 {
            let region = [1 + next(5), 1 + next(4), 1 + next(3)];
            let side = |next: &mut dyn FnMut(usize) -> usize| {
                let row = region[0] + next(6);
                let slice = row * (region[1] + next(3));
                (next(64), [row, slice])
            };
            let (a, b) = (side(&mut next), side(&mut next));
            let (ba, bb) = (bytes(region, a), bytes(region, b));
            let want = ba.iter().any(|i| bb.contains(i));
            assert_eq!(rects_overlap(region, a, b), want, "{region:?} {a:?} {b:?}");
        }
    }

    #[test]
    fn rect_defaults_are_tightly_packed() {
        let r = Rect::new([4, 3, 2]);
        assert_eq!(r.side("x", [0; 3], [0, 0], 24).unwrap(), [4, 12]);
        assert!(matches!(
            r.side("x", [0; 3], [0, 0], 23),
            Err(Error::OutOfBounds {
                size: 23,
                len: 24,
                ..
            })
        ));
        // Origin (1, 1, 1) with pitches (8, 32): first = 32 + 8 + 1 = 41, end = 41 + 32 + 16 + 4.
        assert_eq!(r.side("x", [1, 1, 1], [8, 32], 93).unwrap(), [8, 32]);
        assert!(r.side("x", [1, 1, 1], [8, 32], 92).is_err());
    }

    #[test]
    fn rect_pitch_rules() {
        let r = Rect::new([4, 3, 1]);
        assert!(matches!(
            r.side("x", [0; 3], [3, 0], 100),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            r.side("x", [0; 3], [4, 8], 100),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            r.side("x", [0; 3], [4, 13], 100),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            Rect::new([0, 1, 1]).side("x", [0; 3], [0, 0], 100),
            Err(Error::InvalidArgument(_))
        ));
        assert!(Rect::new([1, 1, 1])
            .side("x", [usize::MAX, 0, 0], [0, 0], 100)
            .is_err());
        assert!(Rect::new([2, 2, 2])
            .side("x", [0, 0, usize::MAX], [0, 0], 100)
            .is_err());
    }

    #[test]
    fn host_ranges() {
        assert_eq!(host_range(10, 2, None).unwrap(), (2, 10));
        assert_eq!(host_range(10, 2, Some(3)).unwrap(), (2, 5));
        assert!(host_range(10, 8, Some(3)).is_err());
        assert!(host_range(10, usize::MAX, Some(3)).is_err());
    }
}
