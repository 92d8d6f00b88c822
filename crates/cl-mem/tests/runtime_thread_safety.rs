//! The thread-safety claims of the runtime core, checked at compile time: every handle type is
//! `Send + Sync` (OpenCL 1.1+ API calls are thread-safe); `Kernel` too, because it sets arguments
//! only under `&mut self` or its own lock (the spec's `clSetKernelArg` exception).

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}

#[test]
fn handles_are_send_and_sync() {
    send_sync::<cl_mem::Platform>();
    send_sync::<cl_mem::Device>();
    send_sync::<cl_mem::Context>();
    send_sync::<cl_mem::Queue>();
    send_sync::<cl_mem::Event>();
    send_sync::<cl_mem::UserEvent>();
    send_sync::<cl_mem::Program>();
    send_sync::<cl_mem::Buffer>();
    send_sync::<cl_mem::Error>();
    send_sync::<cl_mem::Kernel>();
}

/// Futures can move between an executor's worker threads (tokio's multi-thread runtime needs
/// `Send`), and are `Unpin` (awaitable through `&mut`, `select!` without pinning).
#[test]
fn futures_are_send_and_unpin() {
    fn unpin<T: Unpin>() {}
    send_sync::<cl_mem::EventFuture>();
    unpin::<cl_mem::EventFuture>();
    send::<cl_mem::PendingFuture<Vec<u32>>>();
    unpin::<cl_mem::PendingFuture<Vec<u32>>>();
}
