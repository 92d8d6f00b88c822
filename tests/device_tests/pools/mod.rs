//! Memory pools (cl-pool): pooled buffers through every operation, allocators and limits, reuse
//! across queues and threads, SVM pools.

use cl_mem::{Error, MemFlags, Program, Queue};
use cl_pool::{ImmediateAllocator, MemoryPool};

mod allocators;
mod buffers;
mod queues;

fn immediate_pool(q: &Queue) -> Result<MemoryPool<ImmediateAllocator>, Error> {
    Ok(MemoryPool::new(ImmediateAllocator::new(
        q,
        MemFlags::READ_WRITE,
    )?))
}

fn fill_kernel<T: cl_mem::AsKernelArg + ?Sized>(
    q: &Queue,
    target: &T,
    v: u32,
    n: usize,
    wait: &[&cl_mem::Event],
) -> Result<cl_mem::Event, Error> {
    let program = Program::build_from_source(q.context(), FILL_SRC, "")?;
    let mut k = program.kernel("fill")?;
    k.set_arg(0, target)?.set_arg(1, &v)?;
    k.enqueue_nd_range(q, &[n], None, wait)
}

fn expected(v: u32, n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| v + u32::try_from(i).unwrap_or(u32::MAX))
        .collect()
}

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Records the level and message of every `tracing` event in its scope.
#[derive(Clone, Default)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<(tracing::Level, String)>>>);

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        if let Ok(mut v) = self.0.lock() {
            v.push((
                *span.metadata().level(),
                format!("span {}", span.metadata().name()),
            ));
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        if let Ok(mut v) = self.0.lock() {
            v.push((*event.metadata().level(), m.0));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

const FILL_SRC: &str = "__kernel void fill(__global uint* p, uint v) { \
                        size_t i = get_global_id(0); p[i] = v + (uint)i; }";
