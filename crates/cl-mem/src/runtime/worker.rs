//! The callback worker: the one thread where the work of driver callbacks runs.
//!
//! A driver runs event and memory-destructor callbacks on its own threads, and the Intel CPU
//! runtime runs a user event's callbacks inside `clSetUserEventStatus` on the caller's thread.
//! A blocking OpenCL call there may never return (the spec leaves it undefined): on the Intel
//! runtime, `PinnedMemory`'s drop (an unmap, then `clWaitForEvents`) in a command's completion
//! callback stopped the queue for good, and that drop is reached from any callback that drops a
//! kernel's argument snapshot, a `USE_HOST_PTR` buffer's host memory, an image or a user's
//! closure. So cl-mem's callbacks do nothing but hand their work to [`Place::run`], and this
//! thread runs it, in order; there, any drop and any OpenCL call may block.
//!
//! Why a thread and not a list drained by the next cl-mem call: a release must happen without a
//! later call (the next call may never come, or come on another context, and the leak check
//! after each device test waits for releases, not calls); one thread started once costs nothing
//! per callback but a channel send.
//!
//! Oclgrind is the exception ([`Place::for_platform`]): it runs commands and their callbacks on
//! the thread of the API call that runs the queue, where a blocking call does not hang, and it
//! is not thread-safe (docs/DEVICES.md#oclgrind-threads-release): the worker calling it beside
//! the user's thread crashed it. Its callbacks' work runs in place, as the driver calls them.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

use cl_raw::object::{self, Object};
use cl_raw::sys;

use crate::error::run_contained;
use crate::runtime::platform::Platform;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The worker's queue; `None` when the thread could not be started.
static WORKER: OnceLock<Option<Sender<Job>>> = OnceLock::new();

fn start() -> Option<Sender<Job>> {
    let (tx, rx) = channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("cl-mem-callbacks".into())
        .spawn(move || {
            for job in rx {
                run_contained("a callback's work", job);
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

/// Where the work of a callback runs, decided when the callback is registered (a callback
/// must not query the driver to find out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// On the callback worker, after the work handed off before it.
    Worker,
    /// Where the driver calls the callback (Oclgrind: see the module documentation).
    InPlace,
}

impl Place {
    /// Where callbacks of objects of `platform` run their work (its quirks, read once).
    pub(crate) fn for_platform(platform: Platform) -> Place {
        if crate::runtime::quirks::quirks(&platform).callbacks_in_place {
            Place::InPlace
        } else {
            Place::Worker
        }
    }

    /// As [`Place::for_platform`] for the platform of a raw context; the worker when the
    /// driver cannot say.
    pub(crate) fn for_context(context: sys::cl_context) -> Place {
        // SAFETY: a valid context (the caller's); CL_CONTEXT_DEVICES is a 1.0 parameter.
        let devices: Result<Vec<sys::cl_device_id>, _> =
            unsafe { object::get_info(Object::Context, context, sys::CL_CONTEXT_DEVICES) };
        let Some(&device) = devices.ok().as_ref().and_then(|d| d.first()) else {
            return Place::Worker;
        };
        // SAFETY: a device of the context; CL_DEVICE_PLATFORM is a 1.0 parameter.
        match unsafe { cl_raw::device::get_info(device, sys::CL_DEVICE_PLATFORM) } {
            // SAFETY: the id the driver just returned for this device.
            Ok(id) => Place::for_platform(unsafe { Platform::from_raw(id) }),
            Err(_) => Place::Worker,
        }
    }

    /// Runs `job` here or hands it to the worker, as `self` says; returns at once for the
    /// worker. The only thing a driver callback of cl-mem does.
    pub(crate) fn run(self, job: impl FnOnce() + Send + 'static) {
        let job: Job = Box::new(job);
        // Without a worker (the system refused the thread) the job runs here too.
        let job = match (self, WORKER.get_or_init(start)) {
            // The receiver lives as long as the process (the thread never leaves its loop).
            (Place::Worker, Some(tx)) => match tx.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            _ => job,
        };
        run_contained("a callback's work", job);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use super::Place;

    #[test]
    fn work_runs_in_order_on_the_worker_and_survives_a_panic() {
        let (tx, rx) = channel();
        for i in 0..3 {
            let tx = tx.clone();
            Place::Worker.run(move || {
                if i == 1 {
                    panic!("contained");
                }
                let name = std::thread::current().name().map(str::to_owned);
                let _ = tx.send((i, name));
            });
        }
        let got: Vec<_> = (0..2)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        let worker = Some("cl-mem-callbacks".to_owned());
        assert_eq!(got, vec![(0, worker.clone()), (2, worker)]);
    }
}
