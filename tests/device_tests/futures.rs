//! Async: events and non-blocking transfers awaited as futures (issue 14), driven by a
//! hand-written `block_on` (thread park/unpark waker) so no async runtime is needed.
//!
//! Every wait has a time limit: a future that is never woken fails its test ("not woken within
//! ...") instead of hanging the device's process.

use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use cl_mem::{Buffer, ClError, Error, Event, MemFlags, UserEvent};
use cl_tests::{device_test, TestDevice, TestResult};

/// Unparks the thread that blocks on the future.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` on this thread, parking between polls, until it resolves or `limit` passed.
/// Returns the output and the number of polls.
fn block_on<F: Future>(fut: F, limit: Duration) -> Result<(F::Output, usize), String> {
    block_on_then(fut, limit, || {})
}

/// As [`block_on`], calling `after_first_pending` once the first poll returned `Pending` (so a
/// test can complete the event strictly after the future started waiting, however loaded the
/// machine is).
fn block_on_then<F: Future>(
    fut: F,
    limit: Duration,
    after_first_pending: impl FnOnce(),
) -> Result<(F::Output, usize), String> {
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    let deadline = Instant::now() + limit;
    let mut polls = 0;
    let mut hook = Some(after_first_pending);
    loop {
        polls += 1;
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return Ok((out, polls));
        }
        if let Some(h) = hook.take() {
            h();
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(format!("the future was not woken within {limit:?}"));
        }
        // Spurious unparks only cost a poll.
        thread::park_timeout(deadline - now);
    }
}

/// Blocks on `fut` while another thread sets `user`'s status with `set`, strictly after the
/// first poll returned `Pending`; the output, after checking the future was polled again.
fn block_on_while_set<F: Future>(
    fut: F,
    user: &UserEvent,
    set: fn(&UserEvent) -> cl_mem::Result<()>,
) -> Result<F::Output, cl_tests::TestError> {
    let mut setter = None;
    let (out, polls) = block_on_then(fut, LIMIT, || {
        let user = user.clone();
        setter = Some(thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            set(&user)
        }));
    })
    .map_err(cl_tests::fail)?;
    setter
        .ok_or_else(|| {
            cl_tests::fail("the future resolved at its first poll, before the event was set")
        })?
        .join()
        .map_err(|_| cl_tests::fail("the setter thread panicked"))??;
    assert!(
        polls >= 2,
        "the future resolved at poll {polls}, before the event was set"
    );
    Ok(out)
}

const LIMIT: Duration = Duration::from_secs(20);

device_test!(awaiting_a_nonblocking_read_yields_its_data);
fn awaiting_a_nonblocking_read_yields_its_data(dev: &TestDevice) -> TestResult {
    let queue = dev.queue();
    let ctx = queue.context();
    let data: Vec<u32> = (0..4096u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, data.len() * 4)?;
    buf.write(&queue, &data, &[])?;
    let pending = buf.enqueue_read(&queue, vec![0u32; data.len()], &[])?;
    let (got, _) = block_on(pending.into_future(), LIMIT).map_err(cl_tests::fail)?;
    let got = got?;
    assert_eq!(got, data, "the awaited read returned other data");
    // A non-blocking write awaited the same way hands its memory back unchanged.
    let pending = buf.enqueue_write(&queue, vec![7u32; 16], &[])?;
    let (back, _) = block_on(pending.into_future(), LIMIT).map_err(cl_tests::fail)?;
    assert_eq!(back?, vec![7u32; 16]);
    let mut check = vec![0u32; 16];
    buf.read(&queue, &mut check, &[])?;
    assert_eq!(
        check,
        vec![7u32; 16],
        "the awaited write did not reach the buffer"
    );
    Ok(())
}

device_test!(awaiting_a_complete_event_is_ready_at_first_poll);
fn awaiting_a_complete_event_is_ready_at_first_poll(dev: &TestDevice) -> TestResult {
    let queue = dev.queue();
    let marker = queue.enqueue_marker(&[])?;
    marker.wait()?;
    let mut fut = pin!(marker.wait_async());
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r?,
        Poll::Pending => return Err(cl_tests::fail("a complete event's future was pending")),
    }
    // A user event set before the future was made: ready at once too, without a wake.
    let user = UserEvent::new(queue.context())?;
    user.set_complete()?;
    let mut fut = pin!(user.wait_async());
    assert!(
        matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(()))),
        "a complete user event's future was not ready at the first poll"
    );
    Ok(())
}

device_test!(a_user_event_set_on_another_thread_wakes_the_future);
fn a_user_event_set_on_another_thread_wakes_the_future(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let user = UserEvent::new(&ctx)?;
    // Through the plain `Event`: only the driver's CL_COMPLETE callback can wake this one.
    let fut = Event::wait_async(&user);
    block_on_while_set(fut, &user, UserEvent::set_complete)??;
    Ok(())
}

device_test!(a_user_event_set_to_an_error_resolves_to_that_error);
fn a_user_event_set_to_an_error_resolves_to_that_error(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let user = UserEvent::new(&ctx)?;
    let fut = user.wait_async();
    let out = block_on_while_set(fut, &user, |u| u.set_error(ClError::OutOfResources))?;
    assert_eq!(
        out,
        Err(Error::CommandFailed {
            status: ClError::OutOfResources
        }),
        "awaiting a user event set to CL_OUT_OF_RESOURCES"
    );
    // Awaited again (already failed): the same error at once.
    let (again, polls) = block_on(Event::wait_async(&user), LIMIT).map_err(cl_tests::fail)?;
    assert_eq!(polls, 1);
    assert!(
        matches!(again, Err(Error::CommandFailed { .. })),
        "{again:?}"
    );
    Ok(())
}

device_test!(a_transfer_whose_dependency_fails_resolves_to_an_error);
/// A non-blocking read waiting on a user event that another thread sets to an error: the awaited
/// transfer resolves to an error (PoCL calls no callback for it: the future's watcher wakes it;
/// found by a review).
fn a_transfer_whose_dependency_fails_resolves_to_an_error(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        // Its clFlush runs the queue on the calling thread and waits for the user event there,
        // and it crashes under API calls from two host threads (docs/DEVICES.md).
        return Err(cl_tests::skip(
            "Oclgrind 21.10: a flushed command waiting on a user event blocks the flushing thread",
        ));
    }
    let queue = dev.queue();
    let ctx = queue.context();
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 4096)?;
    let user = UserEvent::new(ctx)?;
    let pending = buf.enqueue_read(&queue, vec![0u8; 4096], &[&*user])?;
    let out = block_on_while_set(pending.into_future(), &user, |u| {
        u.set_error(ClError::OutOfResources)
    })?;
    if out.is_ok() {
        return Err(cl_tests::fail(
            "a transfer whose wait-list event failed resolved to Ok",
        ));
    }
    Ok(())
}
