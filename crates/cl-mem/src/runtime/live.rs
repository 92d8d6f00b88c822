//! Counts of live wrapper objects per kind, for leak checks ([`live_objects`]).
//!
//! Each counted wrapper (`Context`, `Queue`, `Buffer`, `Image`, `Memory`) carries a zero-sized
//! [`Live`] token: created with the wrapper (and by its `Clone`), it adds one to its kind's counter;
//! dropped with it (also inside `into_raw`, which drops every field but the handle), it takes one
//! away. Events are counted by hand where `runtime/event.rs` takes and gives up references: every
//! enqueue that returns an `Event`, `from_raw`, `from_raw_retained` and `Clone` add one; `Drop`,
//! `release` and `into_raw` take one away.
//!
//! Cost, and why it is always on: one relaxed atomic add per creation or clone and one per drop,
//! a few nanoseconds against the microseconds of the driver call that creates or releases the
//! object; no lock, no allocation, no size (the token is zero-sized). A feature flag would make the
//! leak check of the device matrix (tests/src/runner.rs) test a different build from the one users
//! get. With several threads the values are snapshots.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The counted kinds, as indices into [`COUNTS`].
pub(crate) const CONTEXT: usize = 0;
/// `Queue`.
pub(crate) const QUEUE: usize = 1;
/// `Buffer`, `Image` and `Memory`: wrappers that own a `cl_mem` reference.
pub(crate) const MEM: usize = 2;

/// `Event` (counted by hand in `runtime/event.rs`, where references are taken and given up).
const EVENT: usize = 3;
/// Argument lists kept on the heap until their command completed (a migration's object list:
/// `buffer/fill.rs`), released by the command's completion callback.
pub(crate) const KEPT: usize = 4;

// Imports nothing of the crate, so every module may count through it without an import circle
// (xtask/tests/module_graph.rs).
static COUNTS: [AtomicUsize; 5] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// One more `Event` wrapper.
pub(crate) fn event_added() {
    COUNTS[EVENT].fetch_add(1, Ordering::Relaxed);
}

/// One `Event` wrapper fewer.
pub(crate) fn event_removed() {
    COUNTS[EVENT].fetch_sub(1, Ordering::Relaxed);
}

/// `Event` wrappers alive now.
pub(crate) fn events() -> usize {
    COUNTS[EVENT].load(Ordering::Relaxed)
}

/// One live wrapper of kind `K`; see the module documentation.
pub(crate) struct Live<const K: usize>(PhantomData<()>);

impl<const K: usize> Live<K> {
    /// Counts one more wrapper of kind `K`.
    pub(crate) fn new() -> Self {
        COUNTS[K].fetch_add(1, Ordering::Relaxed);
        Live(PhantomData)
    }
}

impl<const K: usize> Clone for Live<K> {
    fn clone(&self) -> Self {
        Live::new()
    }
}

impl<const K: usize> Drop for Live<K> {
    fn drop(&mut self) {
        COUNTS[K].fetch_sub(1, Ordering::Relaxed);
    }
}

impl<const K: usize> std::fmt::Debug for Live<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live")
    }
}

/// How many wrappers of each kind are alive in this process: see [`live_objects`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LiveObjects {
    /// [`crate::Context`] wrappers (each owns one context reference; images and queues hold one
    /// each, a buffer one that its clones share).
    pub contexts: usize,
    /// [`crate::Queue`] wrappers.
    pub queues: usize,
    /// [`crate::Buffer`], [`crate::Image`] and [`crate::Memory`] wrappers (sub-buffers and clones
    /// count one each; a sub-buffer also keeps its root alive).
    pub mem_objects: usize,
    /// [`crate::Event`] wrappers (each owns one event reference; references taken through raw
    /// handles or by the driver are not seen).
    pub events: usize,
    /// Argument lists cl-mem keeps until their command completed (a migration's object list,
    /// which NVIDIA's driver reads after the enqueue returned): each goes when its command's
    /// completion callback runs, so a finished command leaves none behind.
    pub kept_lists: usize,
}

impl LiveObjects {
    /// The kinds with more live wrappers in `self` than in `baseline`, as `(kind, how many more)`.
    pub fn more_than(&self, baseline: &LiveObjects) -> Vec<(&'static str, usize)> {
        [
            ("context", self.contexts, baseline.contexts),
            ("queue", self.queues, baseline.queues),
            ("memory object", self.mem_objects, baseline.mem_objects),
            ("event", self.events, baseline.events),
            ("kept argument list", self.kept_lists, baseline.kept_lists),
        ]
        .into_iter()
        .filter(|(_, now, before)| now > before)
        .map(|(kind, now, before)| (kind, now - before))
        .collect()
    }
}

/// How many wrappers of each counted kind are alive in this process now: a leak check's
/// diagnostic (a piece of work that should keep nothing leaves these where it found them).
///
/// Counts wrappers, not driver reference counts: references taken through raw handles or by the
/// driver are not seen, and a handle given away with `into_raw` no longer counts. Pipes, samplers,
/// programs, kernels and SVM allocations are not counted (a kernel or a program holds its context,
/// which is).
pub fn live_objects() -> LiveObjects {
    LiveObjects {
        contexts: COUNTS[CONTEXT].load(Ordering::Relaxed),
        queues: COUNTS[QUEUE].load(Ordering::Relaxed),
        mem_objects: COUNTS[MEM].load(Ordering::Relaxed),
        events: events(),
        kept_lists: COUNTS[KEPT].load(Ordering::Relaxed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_count_creation_clone_and_drop() {
        let before = COUNTS[QUEUE].load(Ordering::Relaxed);
        let a = Live::<QUEUE>::new();
        let b = a.clone();
        assert!(COUNTS[QUEUE].load(Ordering::Relaxed) >= before + 2);
        drop((a, b));
        let base = LiveObjects::default();
        let now = LiveObjects {
            queues: 2,
            events: 1,
            ..base
        };
        assert_eq!(now.more_than(&base), [("queue", 2), ("event", 1)]);
        let kept = LiveObjects {
            kept_lists: 1,
            ..base
        };
        assert_eq!(kept.more_than(&base), [("kept argument list", 1)]);
        assert!(base.more_than(&now).is_empty());
    }
}
