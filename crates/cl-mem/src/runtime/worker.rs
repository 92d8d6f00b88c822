//! The callback worker: the one thread where the work of driver callbacks runs.
//!
//! A driver runs event and memory-destructor callbacks on its own threads, and the Intel CPU
//! runtime runs a user event's callbacks inside `clSetUserEventStatus` on the caller's thread.
//! A blocking OpenCL call there may never return (the spec leaves it undefined): on the Intel
//! runtime, `PinnedMemory`'s drop (an unmap, then `clWaitForEvents`) in a command's completion
//! callback stopped the queue for good, and that drop is reached from any callback that drops a
//! kernel's argument snapshot, a `USE_HOST_PTR` buffer's host memory, an image or a user's
//! closure. So cl-mem's callbacks do nothing but hand their work to [`hand_off`], and this
//! thread runs it, in order; there, any drop and any OpenCL call may block.
//!
//! Why a thread and not a list drained by the next cl-mem call: a release must happen without a
//! later call (the next call may never come, or come on another context, and the leak check
//! after each device test waits for releases, not calls); one thread started once costs nothing
//! per callback but a channel send.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The worker's queue; `None` when the thread could not be started.
static WORKER: OnceLock<Option<Sender<Job>>> = OnceLock::new();

fn start() -> Option<Sender<Job>> {
    let (tx, rx) = channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("cl-mem-callbacks".into())
        .spawn(move || {
            for job in rx {
                if catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!("a callback's work panicked; the panic was contained");
                }
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::error!(error = %e, "no callback worker thread: callbacks run where the driver calls them");
            None
        }
    }
}

/// Runs `job` on the callback worker, after the work handed off before it; returns at once. The
/// only thing a driver callback of cl-mem does.
///
/// Without a worker (the system refused the thread) the job runs here, as before there was one.
pub(crate) fn hand_off(job: impl FnOnce() + Send + 'static) {
    let job: Job = Box::new(job);
    let job = match WORKER.get_or_init(start) {
        // The receiver lives as long as the process (the thread never leaves its loop).
        Some(tx) => match tx.send(job) {
            Ok(()) => return,
            Err(e) => e.0,
        },
        None => job,
    };
    if catch_unwind(AssertUnwindSafe(job)).is_err() {
        tracing::error!("a callback's work panicked; the panic was contained");
    }
}
