//! Staged transfers from and to ordinary (pageable) host memory: [`TransferPath`],
//! [`TransferOptions`], and the staged paths of the blocking [`Buffer::write`] / [`Buffer::read`].
//!
//! # Design
//!
//! A driver copies pageable memory through its own small pinned bounce buffer, one piece after the
//! other: on the H100 6.5 GB/s written and 9.1 GB/s read, against 54 GB/s from pinned memory. The
//! staged path does the bouncing itself, overlapped: the transfer is cut into chunks; `threads`
//! workers each own two pinned chunks (from the context's [`StagingCache`], so pinning is paid
//! once) and, for every chunk they are given, copy it between the user's memory and a pinned chunk
//! while the DMA of their previous chunk runs. Host copies run on several cores (one core's memcpy
//! cannot feed the link), DMAs back to back on the queue.
//!
//! - Every chunk command goes through the allocation's command record like any other transfer, so
//!   maps and other queues' commands are respected, and the whole range is held against new maps
//!   for the whole call (a map waits until the transfer is over: none sees half of it); the whole call is blocking: the user's memory is
//!   borrowed for it, and every chunk command has completed before it returns, also when one failed
//!   (the first error is returned; no pinned chunk is reused or released while a DMA may read it).
//! - Enqueues are serialised by a lock (the copies are not): one thread at a time in the driver's
//!   enqueue path, which some drivers need and costs nothing measurable at chunk granularity.
//! - [`TransferPath::Auto`] stages only where a DMA engine sits behind a link: a GPU device without
//!   host-unified memory, for transfers of [`AUTO_MIN_BYTES`] (32 MiB) or more. On the H100 the
//!   staged path loses below 8 MiB (thread start-up and per-chunk waits), breaks even at 8 MiB, wins
//!   1.1-1.6x at 16 MiB (within the noise of one lease) and 2-5x from 32 MiB on
//!   (docs/PERFORMANCE.md). CPU runtimes copy host memory directly: plain path there.
//!   `CL_TRANSFER_PATH=plain|staged|auto` overrides `Auto` for a whole process.
//!
//! Alternatives considered: the pinned staging pool of cl-pool (issue 8) copied and transferred
//! one after the other on one thread, and lost to the plain path; mapping the destination buffer
//! and copying into the map runs at the host memcpy's speed of one core.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::buffer::rect::{Rect, RectPitches};
use crate::buffer::tracked;
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::raw_handle::RawHandle;
use crate::runtime::device::DeviceType;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;
use crate::runtime::staging::PinnedChunk;
use crate::runtime::track::{Direction, Read, Write};
use cl_raw::ClError;

/// The most copying threads one staged transfer starts, whatever [`TransferOptions::threads`]
/// asks (each is an OS thread with its own pinned chunks).
pub const MAX_STAGING_THREADS: usize = 64;

/// The smallest transfer [`TransferPath::Auto`] stages (on a device that benefits).
pub const AUTO_MIN_BYTES: usize = 32 << 20;

/// Which path a blocking transfer from or to host memory takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TransferPath {
    /// Staged where it wins (see the module documentation), plain elsewhere.
    #[default]
    Auto,
    /// One `clEnqueueWriteBuffer` / `clEnqueueReadBuffer` straight from the host memory.
    Plain,
    /// Through pinned chunks, always (also on CPU devices: for tests and measurements).
    Staged,
}

/// How a blocking transfer from or to host memory runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransferOptions {
    /// The path.
    pub path: TransferPath,
    /// Bytes per chunk of the staged path (default 4 MiB).
    pub chunk_bytes: usize,
    /// Host threads copying chunks on the staged path (default: the cores, at most 8; never more
    /// than [`MAX_STAGING_THREADS`] or the chunk count).
    pub threads: usize,
    /// Pinned chunks per thread (default 2: one being copied while the other's DMA runs; 3 is
    /// triple buffering).
    pub depth: usize,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            path: TransferPath::Auto,
            chunk_bytes: 4 << 20,
            threads: default_threads(),
            depth: 2,
        }
    }
}

/// The cores, at most 8, asked once per process: `Default` is on every transfer's path, and
/// `available_parallelism` reads the scheduler's affinity and cgroup files.
fn default_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}

impl TransferOptions {
    /// The plain path.
    #[must_use]
    pub fn plain() -> Self {
        TransferOptions {
            path: TransferPath::Plain,
            ..TransferOptions::default()
        }
    }

    /// The staged path with `chunk_bytes` per chunk and `threads` copying threads.
    #[must_use]
    pub fn staged(chunk_bytes: usize, threads: usize) -> Self {
        TransferOptions {
            path: TransferPath::Staged,
            chunk_bytes,
            threads,
            ..TransferOptions::default()
        }
    }

    pub(super) fn check(&self) -> Result<()> {
        if self.chunk_bytes == 0 || self.threads == 0 || self.depth == 0 || self.depth > 8 {
            return Err(Error::InvalidArgument(format!(
                "staged transfers need positive chunk bytes and threads and a depth of 1..=8, got \
                 {} bytes, {} threads, depth {}",
                self.chunk_bytes, self.threads, self.depth
            )));
        }
        Ok(())
    }
}

/// Whether a transfer of `bytes` on `queue` takes the staged path.
///
/// `rect`: the region of a rectangle transfer, which `Auto` stages only in a shape where pieces of
/// whole rows pay ([`rect_worth_staging`]); a forced [`TransferPath::Staged`] stages any shape.
fn staged(queue: &Queue, bytes: usize, opts: &TransferOptions, rect: Option<[usize; 3]>) -> bool {
    match resolve(opts.path) {
        TransferPath::Plain => false,
        TransferPath::Staged => bytes > 0,
        TransferPath::Auto => {
            bytes >= AUTO_MIN_BYTES
                && rect.is_none_or(|r| rect_worth_staging(r, opts.chunk_bytes))
                && {
                    let d = queue.device();
                    d.device_type()
                        .is_ok_and(|t| t.contains(DeviceType::GPU) && !t.contains(DeviceType::CPU))
                        && d.host_unified_memory().is_ok_and(|u| !u)
                }
        }
    }
}

/// `path`, with `Auto` overridden by `CL_TRANSFER_PATH=plain|staged` for the whole process.
pub(super) fn resolve(path: TransferPath) -> TransferPath {
    match path {
        TransferPath::Auto => match std::env::var("CL_TRANSFER_PATH").as_deref() {
            Ok("plain") => TransferPath::Plain,
            Ok("staged") => TransferPath::Staged,
            _ => TransferPath::Auto,
        },
        p => p,
    }
}

/// The narrowest rows `Auto` stages: below this a rectangle costs more in per-row copies and
/// per-row host slices than the pinned path saves.
const RECT_MIN_ROW_BYTES: usize = 512;

/// Whether a rectangle's pieces of whole rows of one slice are worth staging: rows of at least
/// [`RECT_MIN_ROW_BYTES`] and at most one chunk (wider rows would pin whole rows, not chunks), and
/// pieces of at least a quarter chunk (a thin slice, e.g. one row per slice, would become one
/// command per slice).
fn rect_worth_staging(region: [usize; 3], chunk_bytes: usize) -> bool {
    let width = region[0];
    width >= RECT_MIN_ROW_BYTES
        && width <= chunk_bytes
        && (chunk_bytes / width).min(region[1]) * width >= chunk_bytes / 4
}

/// The first error of the workers, and whether to stop.
struct Failure {
    stop: AtomicBool,
    first: Mutex<Option<Error>>,
}

impl Failure {
    fn new() -> Self {
        Failure {
            stop: AtomicBool::new(false),
            first: Mutex::new(None),
        }
    }

    fn record(&self, e: Error) {
        self.stop.store(true, Ordering::SeqCst);
        let mut f = self
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if f.is_none() {
            *f = Some(e);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn into_result(self) -> Result<()> {
        match self
            .first
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Splits `n` chunk indices round-robin over the workers.
fn workers(n: usize, opts: &TransferOptions) -> usize {
    opts.threads.clamp(1, n.clamp(1, MAX_STAGING_THREADS))
}

/// A staged transfer's shape: chunk bytes, chunk count, workers, and their pinned chunks.
struct Plan {
    chunk: usize,
    n: usize,
    w: usize,
    /// Pinned chunks per worker: the options' depth, at most the chunks a worker moves (a
    /// 1-chunk transfer pins one chunk, not `depth`).
    depth: usize,
    slots: Vec<PinnedChunk>,
    /// Maps of the range wait until the transfer is over (dropped at the end of the call).
    _hold: crate::runtime::track::Claim,
}

/// Starts one copying worker; a thread the OS refuses is a recorded error (its chunks are not
/// moved, so the call fails), not a panic.
fn spawn_worker<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    failure: &Failure,
    work: impl FnOnce() + Send + 'scope,
) {
    if let Err(e) = std::thread::Builder::new()
        .name("cl-mem-staging".into())
        .spawn_scoped(s, work)
    {
        tracing::warn!("staged transfer: a copying thread could not start: {e}");
        failure.record(Error::Cl {
            call: "std::thread::Builder::spawn_scoped",
            status: ClError::OutOfHostMemory,
        });
    }
}

/// After the workers: the pinned chunks go back to the context's cache; if a worker panicked,
/// its chunk commands may still be running (their events were dropped unwaited), so the chunks
/// are leaked rather than unmapped under a DMA, and the panic goes on.
fn finish_workers(scope: std::thread::Result<()>, slots: Vec<PinnedChunk>, queue: &Queue) {
    match scope {
        Ok(()) => queue.context().staging().give(slots),
        Err(panic) => {
            std::mem::forget(slots);
            resume_unwind(panic);
        }
    }
}

/// Piece `i` of a staged transfer: copies its bytes into the pinned chunk (a write) and returns
/// how many it used.
type Fill<'a> = dyn Fn(usize, &mut [u8]) -> usize + Sync + 'a;

/// Enqueues the command moving piece `i` between the buffer and `len` bytes of pinned memory at
/// `pinned` (non-blocking). Only [`run_writes`] and [`run_reads`] call it, under their enqueue
/// lock, with a pinned chunk that stays alive and untouched by the host until the command
/// completed.
type SendPiece<'a> = dyn Fn(usize, *mut u8, usize) -> Result<Event> + Sync + 'a;

/// `send` of piece `i` under the transfer's enqueue lock: one worker at a time in the driver's
/// enqueue path.
fn send_alone(
    lock: &Mutex<()>,
    send: &SendPiece<'_>,
    i: usize,
    pinned: *mut u8,
    len: usize,
) -> Result<Event> {
    let _one_enqueuer = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    send(i, pinned, len)
}

/// The host side of a staged read: the destination slices of each piece (one for a plain read,
/// a row each for a rectangle), grouped per worker.
type ReadParts<'o> = Vec<Vec<(usize, Vec<&'o mut [u8]>)>>;

/// The workers of a staged write: each copies its pieces (round-robin) into its pinned chunks
/// while the DMA of its previous piece runs.
fn run_writes(queue: &Queue, plan: Plan, fill: &Fill<'_>, send: &SendPiece<'_>) -> Result<()> {
    let Plan {
        n,
        w,
        depth,
        mut slots,
        _hold,
        ..
    } = plan;
    let failure = Failure::new();
    let enqueue_lock = Mutex::new(());
    let scope = catch_unwind(AssertUnwindSafe(|| {
        std::thread::scope(|s| {
            for (t, mine) in slots.chunks_mut(depth).enumerate() {
                let (failure, enqueue_lock) = (&failure, &enqueue_lock);
                spawn_worker(s, failure, move || {
                    let mut pending: Vec<Option<Event>> = (0..depth).map(|_| None).collect();
                    for (k, i) in (t..n).step_by(w).enumerate() {
                        if failure.stopped() {
                            break;
                        }
                        let slot = k % depth;
                        if let Some(e) = pending[slot].take() {
                            if let Err(e) = e.wait() {
                                failure.record(e);
                                break;
                            }
                        }
                        let pinned: &mut PinnedChunk = &mut mine[slot];
                        let len = fill(i, pinned.as_mut_slice());
                        // The chunk stays alive and untouched until the command completed
                        // (waited for before its next use and before the chunks go back).
                        match send_alone(enqueue_lock, send, i, pinned.as_mut_ptr(), len) {
                            Ok(e) => pending[slot] = Some(e),
                            Err(e) => {
                                failure.record(e);
                                break;
                            }
                        }
                    }
                    for e in pending.into_iter().flatten() {
                        if let Err(e) = e.wait() {
                            failure.record(e);
                        }
                    }
                });
            }
        })
    }));
    finish_workers(scope, slots, queue);
    failure.into_result()
}

/// The workers of a staged read: up to `depth` reads in flight per worker, each drained into its
/// destination slices in order once its event completed.
fn run_reads(queue: &Queue, plan: Plan, parts: ReadParts<'_>, send: &SendPiece<'_>) -> Result<()> {
    let Plan {
        depth,
        mut slots,
        _hold,
        ..
    } = plan;
    let failure = Failure::new();
    let enqueue_lock = Mutex::new(());
    let scope = catch_unwind(AssertUnwindSafe(|| {
        std::thread::scope(|s| {
            for (mine, my_parts) in slots.chunks_mut(depth).zip(parts) {
                let (failure, enqueue_lock) = (&failure, &enqueue_lock);
                spawn_worker(s, failure, move || {
                    let mut inflight: std::collections::VecDeque<(usize, Event, Vec<&mut [u8]>)> =
                        std::collections::VecDeque::new();
                    let mut next = my_parts.into_iter();
                    let mut free: Vec<usize> = (0..depth).collect();
                    loop {
                        while !failure.stopped() {
                            let Some(slot) = free.pop() else { break };
                            let Some((i, dst)) = next.next() else {
                                free.push(slot);
                                break;
                            };
                            let len = dst.iter().map(|d| d.len()).sum();
                            let pinned: &mut PinnedChunk = &mut mine[slot];
                            // Written by the command, read by us only after its event completed.
                            match send_alone(enqueue_lock, send, i, pinned.as_mut_ptr(), len) {
                                Ok(e) => inflight.push_back((slot, e, dst)),
                                Err(e) => {
                                    failure.record(e);
                                    free.push(slot);
                                }
                            }
                        }
                        let Some((slot, e, dst)) = inflight.pop_front() else {
                            break;
                        };
                        match e.wait() {
                            Ok(()) if !failure.stopped() => {
                                let mut src = mine[slot].as_slice();
                                for d in dst {
                                    let (head, rest) = src.split_at(d.len());
                                    d.copy_from_slice(head);
                                    src = rest;
                                }
                            }
                            Ok(()) => {}
                            Err(e) => failure.record(e),
                        }
                        free.push(slot);
                    }
                });
            }
        })
    }));
    finish_workers(scope, slots, queue);
    failure.into_result()
}

/// One piece of a staged rectangle: `rows` rows from row `y` of slice `z` of the region.
#[derive(Clone, Copy, Debug)]
struct RectPiece {
    z: usize,
    y: usize,
    rows: usize,
}

impl RectPiece {
    /// The piece as a rectangle of its own: its packed rows in a pinned chunk (origin 0, row
    /// pitch `width`) and its place on the buffer side, `origin` (the whole rectangle's buffer
    /// origin) moved by the piece's first row and slice. `buffer_is_src`: a read.
    fn on_buffer(
        self,
        width: usize,
        origin: [usize; 3],
        buffer_pitches: [usize; 2],
        buffer_is_src: bool,
    ) -> (Rect, RectPitches) {
        let at = [origin[0], origin[1] + self.y, origin[2] + self.z];
        let piece = Rect::new([width, self.rows, 1]);
        let piece = if buffer_is_src {
            piece.src_origin(at)
        } else {
            piece.dst_origin(at)
        };
        (
            piece,
            RectPitches::new([width, width * self.rows], buffer_pitches),
        )
    }
}

/// Where row `y` of slice `z` of a rectangle starts in host memory of `origin` and `pitches`.
fn host_row(origin: [usize; 3], [row, slice]: [usize; 2], y: usize, z: usize) -> usize {
    (origin[2] + z) * slice + (origin[1] + y) * row + origin[0]
}

/// A rectangle cut into pieces of whole rows of one slice, at most `chunk_bytes` each (one row
/// when a row is larger): the pinned chunk size and the pieces.
fn rect_pieces(region: [usize; 3], chunk_bytes: usize) -> (usize, Vec<RectPiece>) {
    let rows_per = (chunk_bytes / region[0]).clamp(1, region[1]);
    let mut pieces = Vec::new();
    for z in 0..region[2] {
        let mut y = 0;
        while y < region[1] {
            let rows = rows_per.min(region[1] - y);
            pieces.push(RectPiece { z, y, rows });
            y += rows;
        }
    }
    (rows_per * region[0], pieces)
}

impl Buffer {
    /// The bytes of [`Buffer::write`], on the path `opts` chooses (by default
    /// [`TransferPath::Auto`]).
    ///
    /// # Errors
    ///
    /// As [`Buffer::write`]; [`Error::InvalidArgument`] for zero chunk bytes or threads
    /// (checked first). On the staged path, the first chunk error, after every chunk command
    /// already enqueued has completed.
    pub(crate) fn write_bytes_with(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        data: &[u8],
        wait: &[&Event],
        opts: TransferOptions,
    ) -> Result<Event> {
        let span = tracing::debug_span!("cl_mem::write", bytes = data.len(), offset = offset_bytes, queue = ?queue.as_raw(), device = ?queue.device().as_raw(), staged = tracing::field::Empty).entered();
        let Some(plan) =
            self.bytes_staging(queue, offset_bytes, data.len(), false, &opts, &span)?
        else {
            // SAFETY: blocking, so `data` is only read during the call.
            return unsafe {
                self.enqueue_bytes::<Write>(
                    queue,
                    true,
                    offset_bytes,
                    data.as_ptr().cast(),
                    data.len(),
                    wait,
                )
            };
        };
        let chunk = plan.chunk;
        let fill = |i: usize, pinned: &mut [u8]| {
            let start = i * chunk;
            let part = &data[start..(start + chunk).min(data.len())];
            pinned[..part.len()].copy_from_slice(part);
            part.len()
        };
        let send = |i: usize, pinned: *mut u8, len: usize| {
            // SAFETY: `pinned` holds `len` bytes that stay alive and untouched until the command
            // completed (`run_writes`); the range is inside the buffer (checked by `plan`).
            unsafe {
                self.enqueue_chunk::<Write>(
                    queue,
                    offset_bytes + i * chunk,
                    pinned.cast_const().cast(),
                    len,
                    wait,
                )
            }
        };
        run_writes(queue, plan, &fill, &send)?;
        queue.enqueue_marker(&[])
    }

    /// The bytes of [`Buffer::read`], on the path `opts` chooses (by default
    /// [`TransferPath::Auto`]).
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`]; [`Error::InvalidArgument`] for options the path cannot take.
    pub(crate) fn read_bytes_with(
        &self,
        queue: &Queue,
        offset_bytes: usize,
        out: &mut [u8],
        wait: &[&Event],
        opts: TransferOptions,
    ) -> Result<Event> {
        let span = tracing::debug_span!("cl_mem::read", bytes = out.len(), offset = offset_bytes, queue = ?queue.as_raw(), device = ?queue.device().as_raw(), staged = tracing::field::Empty).entered();
        let Some(plan) = self.bytes_staging(queue, offset_bytes, out.len(), true, &opts, &span)?
        else {
            // SAFETY: blocking, so `out` is written only during the call, through our exclusive
            // borrow.
            return unsafe {
                self.enqueue_bytes::<Read>(
                    queue,
                    true,
                    offset_bytes,
                    out.as_mut_ptr().cast(),
                    out.len(),
                    wait,
                )
            };
        };
        let (chunk, w) = (plan.chunk, plan.w);
        // Each worker gets its chunks of `out` (round-robin), disjoint borrows.
        let mut parts: ReadParts<'_> = (0..w).map(|_| Vec::new()).collect();
        for (i, p) in out.chunks_mut(chunk).enumerate() {
            parts[i % w].push((i, vec![p]));
        }
        let send = |i: usize, pinned: *mut u8, len: usize| {
            // SAFETY: `pinned` holds `len` bytes written by the command and read by the host only
            // after it completed (`run_reads`); the range is inside the buffer (`plan`).
            unsafe {
                self.enqueue_chunk::<Read>(
                    queue,
                    offset_bytes + i * chunk,
                    pinned.cast(),
                    len,
                    wait,
                )
            }
        };
        run_reads(queue, plan, parts, &send)?;
        queue.enqueue_marker(&[])
    }

    /// A rectangle of [`Buffer::write`], on the path `opts` chooses (the default,
    /// [`TransferPath::Auto`], which stages a rectangle of 32 MiB or more on a discrete GPU when
    /// its rows are 512 bytes to one chunk wide and its slices hold at least a quarter chunk). The
    /// staged path moves whole rows of one slice per piece: each piece is packed into a pinned
    /// chunk by the copying threads and sent with one `clEnqueueWriteBufferRect`.
    ///
    /// # Errors
    ///
    /// As [`Buffer::write`] (checked first, the options too); on the staged path, the first
    /// piece's error after every piece command already enqueued has completed.
    pub(crate) fn write_rect_with<T: crate::pod::Pod>(
        &self,
        queue: &Queue,
        rect: &Rect,
        host: &[T],
        wait: &[&Event],
        opts: TransferOptions,
    ) -> Result<Event> {
        let host = crate::pod::slice_as_bytes(host);
        let (p, staging) = self.rect_staging(queue, rect, host.len(), false, &opts)?;
        let Some((plan, pieces)) = staging else {
            // SAFETY: checked for this queue, `rect` and `host.len()`; blocking, so `host` is
            // read only during the call.
            return unsafe {
                self.enqueue_rect_host::<Write>(queue, true, rect, p, host.as_ptr().cast(), wait)
            };
        };
        let width = rect.region[0];
        let fill = |i: usize, pinned: &mut [u8]| {
            let pc = pieces[i];
            for r in 0..pc.rows {
                let at = host_row(rect.src_origin, p.host, pc.y + r, pc.z);
                pinned[r * width..(r + 1) * width].copy_from_slice(&host[at..at + width]);
            }
            pc.rows * width
        };
        let send = |i: usize, pinned: *mut u8, _len: usize| {
            let (piece, pp) = pieces[i].on_buffer(width, rect.dst_origin, p.buffer, false);
            // SAFETY: the piece lies inside the checked rectangle (so inside the buffer, with
            // its pitches), the pinned chunk holds its packed rows and stays alive and untouched
            // until the command completed (`run_writes`).
            unsafe {
                self.enqueue_rect_host::<Write>(
                    queue,
                    false,
                    &piece,
                    pp,
                    pinned.cast_const().cast(),
                    wait,
                )
            }
        };
        run_writes(queue, plan, &fill, &send)?;
        queue.enqueue_marker(&[])
    }

    /// A rectangle of [`Buffer::read`], on the path `opts` chooses (see `write_rect_with`).
    ///
    /// # Errors
    ///
    /// As `write_rect_with`, for reads.
    pub(crate) fn read_rect_with<T: crate::pod::Pod>(
        &self,
        queue: &Queue,
        rect: &Rect,
        host: &mut [T],
        wait: &[&Event],
        opts: TransferOptions,
    ) -> Result<Event> {
        let host = crate::pod::slice_as_bytes_mut(host);
        let (p, staging) = self.rect_staging(queue, rect, host.len(), true, &opts)?;
        let Some((plan, pieces)) = staging else {
            // SAFETY: checked for this queue, `rect` and `host.len()`; blocking, so `host` is
            // written only during the call through our exclusive borrow.
            return unsafe {
                self.enqueue_rect_host::<Read>(queue, true, rect, p, host.as_mut_ptr().cast(), wait)
            };
        };
        let width = rect.region[0];
        // Every destination row as its own slice (rows of the host rectangle never overlap and
        // come in increasing address order), grouped by piece, pieces round-robin per worker.
        let mut rows: Vec<&mut [u8]> = Vec::with_capacity(rect.region[1] * rect.region[2]);
        let mut rest: &mut [u8] = host;
        let mut consumed = 0;
        for z in 0..rect.region[2] {
            for y in 0..rect.region[1] {
                let at = host_row(rect.dst_origin, p.host, y, z);
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(at - consumed);
                let (r, tail) = tail.split_at_mut(width);
                rows.push(r);
                rest = tail;
                consumed = at + width;
            }
        }
        let w = plan.w;
        let mut parts: ReadParts<'_> = (0..w).map(|_| Vec::new()).collect();
        let mut rows = rows.into_iter();
        for (i, pc) in pieces.iter().enumerate() {
            parts[i % w].push((i, rows.by_ref().take(pc.rows).collect()));
        }
        let send = |i: usize, pinned: *mut u8, _len: usize| {
            let (piece, pp) = pieces[i].on_buffer(width, rect.src_origin, p.buffer, true);
            // SAFETY: as in `write_rect_with`; the pinned chunk is read by the host only after
            // the command completed (`run_reads`).
            unsafe { self.enqueue_rect_host::<Read>(queue, false, &piece, pp, pinned.cast(), wait) }
        };
        run_reads(queue, plan, parts, &send)?;
        queue.enqueue_marker(&[])
    }

    /// The options checked, then the path of a transfer of `len` bytes at `offset` (`reading`:
    /// device to host), recorded on `span`: `None` for the plain path (its checks follow there),
    /// or the plan of the staged one.
    fn bytes_staging(
        &self,
        queue: &Queue,
        offset: usize,
        len: usize,
        reading: bool,
        opts: &TransferOptions,
        span: &tracing::Span,
    ) -> Result<Option<Plan>> {
        opts.check()?;
        let is_staged = staged(queue, len, opts, None);
        span.record("staged", is_staged);
        if !is_staged {
            return Ok(None);
        }
        self.plan(queue, offset, len, reading, opts).map(Some)
    }

    /// The checks (before the driver) and the pinned chunks of a staged transfer of `len` bytes
    /// at `offset` (`reading`: device to host).
    fn plan(
        &self,
        queue: &Queue,
        offset: usize,
        len: usize,
        reading: bool,
        opts: &TransferOptions,
    ) -> Result<Plan> {
        self.check_host_bytes(queue, offset, len, reading)?;
        let hold = self.tracked.hold((offset, len), !reading)?;
        let chunk = opts.chunk_bytes.min(len);
        Self::plan_with(queue, chunk, len.div_ceil(chunk), opts, hold)
    }

    /// The checks of a host rectangle transfer (the rectangle first, then the options), and, where
    /// it takes the staged path, its pieces and pinned chunks.
    #[expect(clippy::type_complexity, reason = "a private pair")]
    fn rect_staging(
        &self,
        queue: &Queue,
        rect: &Rect,
        host_len: usize,
        reading: bool,
        opts: &TransferOptions,
    ) -> Result<(RectPitches, Option<(Plan, Vec<RectPiece>)>)> {
        let p = self.check_host_rect(queue, reading, rect, host_len)?;
        opts.check()?;
        if !staged(
            queue,
            rect.region.iter().product::<usize>(),
            opts,
            Some(rect.region),
        ) {
            return Ok((p, None));
        }
        let (chunk, pieces) = rect_pieces(rect.region, opts.chunk_bytes);
        let plan = self.plan_pieces(queue, reading, chunk, pieces.len(), opts)?;
        Ok((p, Some((plan, pieces))))
    }

    /// The pinned chunks of a staged rectangle of `n` pieces of at most `chunk` bytes (checked
    /// by the caller); the whole buffer is held against maps for the call.
    fn plan_pieces(
        &self,
        queue: &Queue,
        reading: bool,
        chunk: usize,
        n: usize,
        opts: &TransferOptions,
    ) -> Result<Plan> {
        let hold = self.tracked.hold((0, self.size_bytes()), !reading)?;
        Self::plan_with(queue, chunk, n, opts, hold)
    }

    fn plan_with(
        queue: &Queue,
        chunk: usize,
        n: usize,
        opts: &TransferOptions,
        hold: crate::runtime::track::Claim,
    ) -> Result<Plan> {
        let w = workers(n, opts);
        let depth = opts.depth.min(n.div_ceil(w));
        let slots = queue.context().staging().take(
            queue.context().as_raw(),
            queue.as_raw(),
            chunk,
            w * depth,
        )?;
        Ok(Plan {
            chunk,
            n,
            w,
            depth,
            slots,
            _hold: hold,
        })
    }

    /// One chunk command of a staged transfer (non-blocking, tracked; its caller holds the
    /// enqueue lock, so that one thread at a time is in the driver's enqueue path).
    ///
    /// # Safety
    ///
    /// 1. `host` points at `len` bytes of pinned memory that stay alive, and are not accessed by
    ///    the host, until the returned event completed.
    /// 2. `offset .. offset + len` is inside the buffer; `queue` and `wait` belong to its context
    ///    (checked by the callers).
    unsafe fn enqueue_chunk<D: Direction>(
        &self,
        queue: &Queue,
        offset: usize,
        host: D::Host,
        len: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        // SAFETY: obligations 1 and 2; the buffer's handle and record are valid while `self` is.
        unsafe {
            tracked::enqueue_host::<D>(
                queue,
                self.raw,
                Some(&self.tracked),
                false,
                offset,
                host,
                len,
                wait,
            )
        }
    }
}

/// Pinned chunks cached by `queue`'s context (tests).
#[doc(hidden)]
pub fn idle_staging_chunks(queue: &Queue) -> usize {
    queue.context().staging().idle()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_stages_only_rectangles_whose_pieces_pay() {
        let chunk = 4 << 20;
        // Wide rows, tall slices: staged.
        assert!(rect_worth_staging([16 << 10, 4096, 1], chunk));
        assert!(rect_worth_staging([4 << 20, 64, 1], chunk));
        // One row per slice, or thin slices: one command per slice otherwise.
        assert!(!rect_worth_staging([1, 1, 32 << 20], chunk));
        assert!(!rect_worth_staging([4096, 1, 8192], chunk));
        assert!(!rect_worth_staging([4096, 255, 64], chunk));
        assert!(rect_worth_staging([4096, 256, 64], chunk));
        // Narrow columns: a host slice per row.
        assert!(!rect_worth_staging([1, 16 << 20, 1], chunk));
        assert!(!rect_worth_staging([511, 1 << 20, 1], chunk));
        // Rows wider than a chunk would pin whole rows.
        assert!(!rect_worth_staging([(4 << 20) + 1, 64, 1], chunk));
        assert!(!rect_worth_staging([256 << 20, 16, 1], chunk));
    }
}
