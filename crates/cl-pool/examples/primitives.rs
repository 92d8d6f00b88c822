//! What the hit path's building blocks cost on this machine (ns per operation, single thread):
//! `cargo run --release -p cl-pool --example primitives`. Used to explain the pool's hit latency
//! per host (docs/PERFORMANCE.md).
use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

thread_local! {
    static TLS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn time(name: &str, n: u64, mut f: impl FnMut()) {
    for _ in 0..n / 10 {
        f();
    }
    let t0 = Instant::now();
    for _ in 0..n {
        f();
    }
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let ns = t0.elapsed().as_nanos() as f64 / n as f64;
    println!("{name:<40} {ns:6.2} ns");
}

fn main() {
    let n = 20_000_000;
    let a = AtomicUsize::new(0);
    time("empty loop", n, || {
        black_box(());
    });
    time("relaxed load", n, || {
        black_box(a.load(Ordering::Relaxed));
    });
    time("fetch_add (lock xadd)", n, || {
        black_box(a.fetch_add(1, Ordering::Relaxed));
    });
    time("compare_exchange (lock cmpxchg)", n, || {
        let v = a.load(Ordering::Relaxed);
        black_box(
            a.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                .ok(),
        );
    });
    let s = parking_lot::Mutex::new(0u64);
    time("parking_lot::Mutex lock + unlock", n, || {
        *s.lock() += 1;
    });
    let m = Mutex::new(0u64);
    time("std Mutex lock + unlock", n, || {
        if let Ok(mut g) = m.lock() {
            *g += 1;
        }
    });
    let arc = Arc::new(0u64);
    time("Arc clone + drop", n, || {
        black_box(Arc::clone(&arc));
    });
    TLS.with(|v| v.borrow_mut().push(1));
    time("thread_local + RefCell borrow", n, || {
        TLS.with(|v| black_box(v.borrow().first().copied()));
    });
    let mut v: Vec<u64> = Vec::with_capacity(16);
    time("Vec push + pop", n, || {
        v.push(1);
        black_box(v.pop());
    });
}
