//! `CounterScope`: peak and counter reports over a region of code ([`MemoryPool::scope`]).

use std::fmt;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use crate::allocator::Allocator;
use crate::stats::{PoolStats, ScopeReport};

use super::MemoryPool;

/// A phase of a pool's life whose peaks and counts are measured on their own (see
/// [`MemoryPool::scope`]); closed by [`close`](Self::close) or on drop.
pub(super) struct CounterScope<A: Allocator> {
    pub(super) pool: MemoryPool<A>,
    pub(super) before: PoolStats,
    pub(super) open: bool,
}

impl<A: Allocator> fmt::Debug for CounterScope<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CounterScope")
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

impl<A: Allocator> CounterScope<A> {
    /// Closes the scope and reports what happened during it.
    pub(super) fn close(&mut self) -> ScopeReport {
        self.open = false;
        let i = &*self.pool.inner;
        let (peak_active, peak_managed) = {
            let mut stack = i.scope_stack.lock();
            let pa = i.scope_peak_active.load(Relaxed);
            let pm = i.scope_peak_managed.load(Relaxed);
            let (sa, sm) = stack.pop().unwrap_or((0, 0));
            // The enclosing scope saw everything this one saw.
            // `fetch_max`: a thread raising the peak meanwhile is not lost for the enclosing scope.
            i.scope_peak_active.fetch_max(sa.max(pa), Relaxed);
            i.scope_peak_managed.fetch_max(sm.max(pm), Relaxed);
            i.hot.scopes_open.fetch_sub(1, SeqCst);
            (pa, pm)
        };
        let after = self.pool.stats();
        ScopeReport {
            peak_active_bytes: peak_active,
            peak_managed_bytes: peak_managed,
            hits: after.hits - self.before.hits,
            misses: after.misses - self.before.misses,
            upstream_allocations: after.upstream_allocations - self.before.upstream_allocations,
            upstream_frees: after.upstream_frees - self.before.upstream_frees,
        }
    }
}

impl<A: Allocator> Drop for CounterScope<A> {
    fn drop(&mut self) {
        if self.open {
            self.close();
        }
    }
}
