//! A lock biased towards one thread (its *owner*): the owner takes and releases it with plain
//! loads and stores, no locked instruction; any other thread pays an asymmetric fence instead
//! (Linux `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, which makes every running thread of the
//! process execute a full barrier). One of cl-pool's two `unsafe` modules (with `tls.rs`).
//!
//! Why: a per-thread cache slot of the pool is locked on every hit and every return by its own
//! thread, and only rarely by another (a statistics read, `free_held`, an owned block freed on
//! another thread, a policy switch). An uncontended spin lock still costs a locked
//! read-modify-write per hit and per return (12.5 ns each on the H100 machine's Xeon host, where
//! the single-thread goal is 25 ns for both); with this lock the owner pays a store, a compiler
//! fence and a load.
//!
//! # Protocol (Dekker's, with the expensive half of the fence moved to the rare side)
//!
//! - Owner: `busy = true`; *light fence* (a compiler fence when the heavy fence is `membarrier`,
//!   else a full fence); if `wanted` (another thread is in or entering), `busy = false` and lock
//!   as another thread would; else the data is the owner's until `busy = false` (release).
//! - Another thread: the `remote` spin lock (one other thread at a time); `wanted = true`;
//!   *heavy fence*; wait until `busy` is false (acquire); the data is its own until
//!   `wanted = false` (release) and the spin lock's release.
//!
//! With `membarrier`, the heavy fence makes every thread of the process run a full barrier, so
//! either the owner's `busy = true` is visible to the other thread after its fence, or the
//! owner's later load of `wanted` sees `true`: the two never both proceed (the scheme of folly's
//! `asymmetric_thread_fence_{light,heavy}` and liburcu). Without it (not Linux, kernel < 4.14,
//! the system call filtered, Miri) both fences are `SeqCst` fences and this is plain Dekker: the
//! owner pays one full fence instead of the locked instruction, still no shared line written.
//!
//! Who is the owner is decided by the caller's thread identity (`super::cache::thread_key`): a
//! lock made with key `k` takes the owner path only on the thread whose key is `k` (a thread's
//! key is the address of its thread-local slot list, unique among live threads; 0, never an
//! owner, while a thread is exiting). Every other call takes the other path, so the choice is
//! always safe; it is only slower when wrong.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU8, Ordering};

/// Whether `membarrier` serves as the heavy fence: decided once, before the first lock exists.
static MODE: AtomicU8 = AtomicU8::new(MODE_UNKNOWN);
const MODE_UNKNOWN: u8 = 0;
const MODE_MEMBARRIER: u8 = 1;
const MODE_FENCES: u8 = 2;

#[cfg(all(target_os = "linux", not(miri)))]
fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier(2) takes a command and flags (and a CPU id, unused here) by value and
    // touches no memory of this process.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
fn try_register_membarrier() -> bool {
    const QUERY: libc::c_int = 0;
    const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;
    let supported = membarrier(QUERY);
    supported >= 0
        && supported & libc::c_long::from(PRIVATE_EXPEDITED) != 0
        && membarrier(REGISTER_PRIVATE_EXPEDITED) == 0
        // One real call: a filter that allows registration but not the command shows here.
        && membarrier(PRIVATE_EXPEDITED) == 0
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn try_register_membarrier() -> bool {
    false
}

/// Decides the fence mode (once per process). Called by [`BiasedLock::new`], so that every owner
/// and every other thread use the same pair of fences for as long as any lock exists.
fn mode() -> u8 {
    let m = MODE.load(Ordering::Acquire);
    if m != MODE_UNKNOWN {
        return m;
    }
    let chosen = if std::env::var_os("CL_POOL_NO_MEMBARRIER").is_none() && try_register_membarrier()
    {
        MODE_MEMBARRIER
    } else {
        MODE_FENCES
    };
    // The first decision wins (two threads may race here; both decide before any lock exists).
    match MODE.compare_exchange(MODE_UNKNOWN, chosen, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => chosen,
        Err(existing) => existing,
    }
}

/// Whether the per-thread caches' lock uses Linux `membarrier` (the owner's hit path then runs
/// no fence and no locked instruction); `false`: a `SeqCst` fence on each side instead (not Linux,
/// the system call unavailable or filtered, or `CL_POOL_NO_MEMBARRIER` set). Decided once per
/// process, when the first cache is made.
#[must_use]
pub fn uses_membarrier() -> bool {
    mode() == MODE_MEMBARRIER
}

/// The owner's half of the fence; `membarrier`: the process's mode (copied into each lock, so
/// the owner's path reads it from the lock's own line instead of a global).
#[inline]
fn light_fence(membarrier: bool) {
    if membarrier {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

#[cold]
fn heavy_fence() {
    #[cfg(all(target_os = "linux", not(miri)))]
    if MODE.load(Ordering::Relaxed) == MODE_MEMBARRIER {
        const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
        if membarrier(PRIVATE_EXPEDITED) == 0 {
            return;
        }
        // Registered and refused later: cannot happen (the kernel keeps the registration);
        // abort rather than run the owner path without its guarantee.
        std::process::abort();
    }
    fence(Ordering::SeqCst);
}

/// See the module docs.
pub(crate) struct BiasedLock<T> {
    owner: usize,
    /// [`mode`] is `membarrier` (decided before this lock was made, never changed after).
    membarrier: bool,
    busy: AtomicBool,
    wanted: AtomicBool,
    remote: spin::Mutex<()>,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, and the protocol above gives one guard at a
// time (the owner's or one other thread's), so sharing the lock shares `T` as a mutex does.
unsafe impl<T: Send> Sync for BiasedLock<T> {}
// SAFETY: as for a mutex: moving the lock moves `T`.
unsafe impl<T: Send> Send for BiasedLock<T> {}

impl<T> BiasedLock<T> {
    /// A lock whose owner is the thread with key `owner` (0: no owner, every lock is the
    /// other path).
    pub(crate) fn new(owner: usize, value: T) -> Self {
        BiasedLock {
            owner,
            membarrier: mode() == MODE_MEMBARRIER,
            busy: AtomicBool::new(false),
            wanted: AtomicBool::new(false),
            remote: spin::Mutex::new(()),
            data: UnsafeCell::new(value),
        }
    }

    /// Locks: the owner path when `me` (the calling thread's key) is the owner's, else the
    /// other path.
    #[inline]
    pub(crate) fn lock_as(&self, me: usize) -> BiasedGuard<'_, T> {
        if me != 0 && me == self.owner {
            self.busy.store(true, Ordering::Relaxed);
            light_fence(self.membarrier);
            if !self.wanted.load(Ordering::Acquire) {
                return BiasedGuard {
                    lock: self,
                    release: &self.busy,
                    _remote: None,
                };
            }
            self.busy.store(false, Ordering::Release);
        }
        self.lock_other()
    }

    #[cold]
    fn lock_other(&self) -> BiasedGuard<'_, T> {
        let m = self.remote.lock();
        self.wanted.store(true, Ordering::Relaxed);
        heavy_fence();
        let mut spins = 0u64;
        let mut since: Option<std::time::Instant> = None;
        let mut warned = false;
        while self.busy.load(Ordering::Acquire) {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if warned || !spins.is_multiple_of(1 << 20) {
                continue;
            }
            let t0 = *since.get_or_insert_with(std::time::Instant::now);
            if t0.elapsed() > std::time::Duration::from_secs(10) {
                warned = true;
                // Seconds of spinning: the owner holds its guard and waits for something this
                // thread holds (a bug). Say so once, with this thread's stack.
                eprintln!(
                    "cl-pool: a thread waits for the owner (key {:#x}) of a cache slot to let it \
                     go; its stack:\n{}",
                    self.owner,
                    std::backtrace::Backtrace::force_capture()
                );
            }
        }
        BiasedGuard {
            lock: self,
            release: &self.wanted,
            _remote: Some(m),
        }
    }
}

/// Access to a [`BiasedLock`]'s data; unlocks when dropped.
pub(crate) struct BiasedGuard<'a, T> {
    lock: &'a BiasedLock<T>,
    /// The flag that unlocking clears: the owner's `busy`, or another thread's `wanted` (then
    /// the spin lock is let go after it, when `_remote` drops). A pointer rather than a choice
    /// made when unlocking: the two paths meet before the caller's work, and the choice was a
    /// select and an indexed store on every hit and every return (issue 12).
    release: &'a AtomicBool,
    /// Another thread's hold of the spin lock (kept for its drop).
    _remote: Option<spin::MutexGuard<'a, ()>>,
}

impl<T> Deref for BiasedGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (module docs): no `&mut T` exists elsewhere.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for BiasedGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` keeps this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for BiasedGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Another thread's spin lock (`_remote`) is released after this, when the field drops.
        self.release.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The owner and three other threads increment a non-atomic counter through the lock; any
    /// lost update shows a broken exclusion.
    #[test]
    fn owner_and_others_exclude_each_other() {
        const ROUNDS: u64 = 200_000;
        const OTHERS: usize = 3;
        let owner_key = 0x1000;
        let lock = Arc::new(BiasedLock::new(owner_key, (0u64, 0u64)));
        let mut handles = Vec::new();
        for t in 0..OTHERS {
            let l = Arc::clone(&lock);
            handles.push(std::thread::spawn(move || {
                for i in 0..ROUNDS / 100 {
                    let mut g = l.lock_as(0x2000 + t);
                    // A read-modify-write spread over two fields: torn by any overlap.
                    let (a, b) = *g;
                    std::hint::black_box(i);
                    *g = (a + 1, b + 1);
                }
            }));
        }
        for _ in 0..ROUNDS {
            let mut g = lock.lock_as(owner_key);
            let (a, b) = *g;
            *g = (a + 1, b + 1);
        }
        for h in handles {
            h.join().expect("a locking thread panicked");
        }
        let g = lock.lock_as(0);
        assert_eq!(
            *g,
            (
                ROUNDS + OTHERS as u64 * (ROUNDS / 100),
                ROUNDS + OTHERS as u64 * (ROUNDS / 100)
            )
        );
    }

    /// A key of 0 is never the owner (an exiting thread's key).
    #[test]
    fn key_zero_takes_the_other_path() {
        let lock = BiasedLock::new(0, 5u32);
        let g = lock.lock_as(0);
        assert!(g._remote.is_some());
        assert_eq!(*g, 5);
    }
}
