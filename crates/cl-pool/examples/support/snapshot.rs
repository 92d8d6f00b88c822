//! PyTorch memory-snapshot JSON of a replay ([`pytorch_snapshot`]); needs cl-pool's `serde`
//! feature (for `serde_json`).

use std::collections::HashMap;

use cl_pool::trace::{ReplayConfig, TraceEvent};
use cl_pool::{
    HostAllocError, HostBlock, InvalidLeadingBits, MemoryPool, PoolBlock, SimulatedAllocator,
};

/// An upstream that gives every block an address (a bump pointer, never reused) and logs
/// PyTorch-style segment events.
#[derive(Debug)]
struct AddressingAllocator {
    inner: SimulatedAllocator,
    state: std::sync::Mutex<AddressingState>,
}

#[derive(Debug, Default)]
struct AddressingState {
    next_addr: u64,
    addr_of: HashMap<u64, (u64, usize)>,
    events: Vec<serde_json::Value>,
}

impl AddressingAllocator {
    fn state(&self) -> std::sync::MutexGuard<'_, AddressingState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl cl_pool::Allocator for AddressingAllocator {
    type Block = HostBlock;
    type Error = HostAllocError;

    fn allocate(&self, size: usize) -> Result<Option<HostBlock>, HostAllocError> {
        let block = self.inner.allocate(size)?;
        if let Some(b) = &block {
            let mut st = self.state();
            let addr = st.next_addr;
            let span = u64::try_from(size).unwrap_or(u64::MAX).div_ceil(512) * 512;
            st.next_addr = st.next_addr.saturating_add(span.max(512));
            st.addr_of.insert(b.id, (addr, size));
            st.events.push(serde_json::json!({
                "action": "segment_alloc", "addr": addr, "size": size, "stream": 0, "frames": []
            }));
        }
        Ok(block)
    }

    fn free(&self, block: HostBlock) -> Result<(), HostAllocError> {
        {
            let mut st = self.state();
            if let Some((addr, size)) = st.addr_of.remove(&block.id) {
                st.events.push(serde_json::json!({
                    "action": "segment_free", "addr": addr, "size": size, "stream": 0, "frames": []
                }));
            }
        }
        self.inner.free(block)
    }
}

/// Replays `trace` and returns a snapshot in the layout of PyTorch's
/// `torch.cuda.memory._snapshot()` (`segments` = upstream allocations, each with its one block,
/// `active_allocated` or `inactive` (held); `device_traces[0]` = `segment_alloc` / `segment_free`
/// for upstream calls and `alloc` / `free_requested` / `free_completed` for pool requests), taken
/// just before the last event.
///
/// PyTorch's viewer (pytorch.org/memory_viz) reads pickles: convert with
/// `python -c "import json,pickle,sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2],'wb'))" s.json s.pickle`.
/// Addresses are synthetic (a bump pointer over the upstream allocations).
///
/// # Errors
///
/// [`InvalidLeadingBits`] for a bad `leading_bits`.
pub(crate) fn pytorch_snapshot(
    trace: &[TraceEvent],
    config: &ReplayConfig,
) -> Result<serde_json::Value, InvalidLeadingBits> {
    let pool = MemoryPool::builder(AddressingAllocator {
        inner: SimulatedAllocator::new(config.capacity),
        state: std::sync::Mutex::new(AddressingState::default()),
    })
    .leading_bits(config.leading_bits)
    .policy(config.policy)
    .build()?;
    let mut live: HashMap<u64, PoolBlock<AddressingAllocator>> = HashMap::new();
    let last = trace.len().saturating_sub(1);
    let mut segments = Vec::new();
    for (i, event) in trace.iter().enumerate() {
        if i == last {
            segments = snapshot_segments(&pool, &live);
        }
        match *event {
            TraceEvent::Alloc { id, size } => {
                if let Ok(block) = pool.allocate(size) {
                    let mut st = pool.allocator().state();
                    let addr = st.addr_of.get(&block.block().id).map_or(0, |a| a.0);
                    let bytes = block.allocated_bytes();
                    st.events.push(serde_json::json!({
                        "action": "alloc", "addr": addr, "size": bytes, "stream": 0, "frames": []
                    }));
                    drop(st);
                    live.insert(id, block);
                } else {
                    let mut st = pool.allocator().state();
                    st.events.push(serde_json::json!({
                        "action": "oom", "addr": 0, "size": size, "stream": 0, "frames": []
                    }));
                }
            }
            TraceEvent::Free { id } => {
                if let Some(block) = live.remove(&id) {
                    let addr = pool
                        .allocator()
                        .state()
                        .addr_of
                        .get(&block.block().id)
                        .map_or(0, |a| a.0);
                    let bytes = block.allocated_bytes();
                    drop(block);
                    let mut st = pool.allocator().state();
                    for action in ["free_requested", "free_completed"] {
                        st.events.push(serde_json::json!({
                            "action": action, "addr": addr, "size": bytes, "stream": 0, "frames": []
                        }));
                    }
                }
            }
        }
    }
    let events = std::mem::take(&mut pool.allocator().state().events);
    drop(live);
    Ok(serde_json::json!({
        "segments": segments,
        "device_traces": [events],
    }))
}

fn snapshot_segments(
    pool: &MemoryPool<AddressingAllocator>,
    live: &HashMap<u64, PoolBlock<AddressingAllocator>>,
) -> Vec<serde_json::Value> {
    let active: HashMap<u64, (usize, usize)> = live
        .values()
        .map(|b| (b.block().id, (b.requested_bytes(), b.allocated_bytes())))
        .collect();
    let st = pool.allocator().state();
    let mut segs: Vec<(u64, u64, usize)> = st
        .addr_of
        .iter()
        .map(|(&id, &(addr, size))| (addr, id, size))
        .collect();
    segs.sort_unstable();
    segs.into_iter()
        .map(|(addr, id, size)| {
            let (state, requested, active_size) = match active.get(&id) {
                Some(&(req, _)) => ("active_allocated", req, size),
                None => ("inactive", 0, 0),
            };
            serde_json::json!({
                "device": 0, "address": addr, "total_size": size, "allocated_size": active_size,
                "active_size": active_size, "requested_size": requested, "stream": 0,
                "segment_type": if size >= (1 << 20) { "large" } else { "small" },
                "segment_pool_id": [0, 0], "is_expandable": false, "frames": [],
                "blocks": [{
                    "address": addr, "size": size, "requested_size": requested, "state": state,
                    "frames": []
                }]
            })
        })
        .collect()
}
