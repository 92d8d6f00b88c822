//! Stress tests of the per-thread caches (issue 12), written by a review that tried to break
//! them: a tracking allocator panics on a double free, a guard panics on a block handed out
//! twice, and every test ends balanced (nothing lost, nothing leaked) with threads, walks,
//! policy switches, pool drops and address reuse racing each other.
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns; a failed unwrap is a failed test"
)]
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};

use cl_pool::{Allocator, HostAllocError, MemoryPool, PoolBlock};

static NEXT: AtomicU64 = AtomicU64::new(1);
static LIVE: Mutex<Option<HashSet<u64>>> = Mutex::new(None);
static OUT: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

fn live() -> std::sync::MutexGuard<'static, Option<HashSet<u64>>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}
fn out() -> std::sync::MutexGuard<'static, Option<HashSet<u64>>> {
    OUT.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
struct TB {
    id: u64,
    size: usize,
}

#[derive(Debug, Default)]
struct Track {
    in_use: AtomicUsize,
    allocs: AtomicU64,
    frees: AtomicU64,
}

#[derive(Debug, Default, Clone)]
struct TA(Arc<Track>);

impl Allocator for TA {
    type Block = TB;
    type Error = HostAllocError;
    fn allocate(&self, size: usize) -> Result<Option<TB>, HostAllocError> {
        let id = NEXT.fetch_add(1, SeqCst);
        assert!(live().get_or_insert_with(HashSet::new).insert(id));
        self.0.in_use.fetch_add(size, SeqCst);
        self.0.allocs.fetch_add(1, SeqCst);
        Ok(Some(TB { id, size }))
    }
    fn free(&self, b: TB) -> Result<(), HostAllocError> {
        assert!(
            live().get_or_insert_with(HashSet::new).remove(&b.id),
            "double free {}",
            b.id
        );
        self.0.in_use.fetch_sub(b.size, SeqCst);
        self.0.frees.fetch_add(1, SeqCst);
        Ok(())
    }
}

/// A user's block: checks it is not handed out twice.
struct G(Option<PoolBlock<TA>>);
impl G {
    fn new(b: PoolBlock<TA>) -> G {
        assert!(
            out().get_or_insert_with(HashSet::new).insert(b.block().id),
            "handed out twice {}",
            b.block().id
        );
        G(Some(b))
    }
}
impl Drop for G {
    fn drop(&mut self) {
        let b = self.0.take().unwrap();
        assert!(out().get_or_insert_with(HashSet::new).remove(&b.block().id));
        drop(b);
    }
}

fn rng(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Waits (up to 3 s) for threads that are still exiting: a scoped thread's thread-locals may
/// still be going when its scope returns, and a cache asked to free its blocks frees them at its
/// thread's exit (the allocator's count then moves a moment after the pool's).
fn settle(p: &MemoryPool<TA>, done: impl Fn(&MemoryPool<TA>) -> bool) {
    for _ in 0..10_000 {
        if done(p) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

fn quiescent(p: &MemoryPool<TA>, what: &str) {
    // Every figure below at rest: an exiting thread's cache may still be moving or freeing blocks
    // between two snapshots (`stats` and `bin_stats` are each consistent, not together).
    settle(p, |p| {
        let s = p.stats();
        let held: usize = p.bin_stats().iter().map(|b| b.held_blocks).sum();
        s.managed_bytes == p.allocator().0.in_use.load(SeqCst)
            && s.managed_bytes == s.held_bytes
            && s.active_blocks == 0
            && held == s.held_blocks
            && s.held_blocks as u64 == s.upstream_allocations - s.upstream_frees
            && held == p.stats().held_blocks
    });
    let s = p.stats();
    assert_eq!(s.active_blocks, 0, "{what} {s:?}");
    assert_eq!(s.active_bytes, 0, "{what} {s:?}");
    assert_eq!(s.active_rounded_bytes, 0, "{what} {s:?}");
    assert_eq!(s.managed_bytes, s.held_bytes, "{what} {s:?}");
    assert_eq!(
        s.managed_bytes,
        p.allocator().0.in_use.load(SeqCst),
        "{what}"
    );
    assert_eq!(
        s.held_blocks as u64,
        s.upstream_allocations - s.upstream_frees,
        "{what} {s:?}"
    );
    let held: usize = p.bin_stats().iter().map(|b| b.held_blocks).sum();
    assert_eq!(held, s.held_blocks, "{what}");
    let ab: usize = p.bin_stats().iter().map(|b| b.active_blocks).sum();
    assert_eq!(ab, 0, "{what}");
}

fn sz(r: u64) -> usize {
    let pick = |m: u64| usize::try_from(r % m).unwrap();
    [8usize, 100, 1000, 1023, 5000, 70_000][pick(6)] + usize::try_from((r >> 8) % 7).unwrap()
}

/// One pool per round (1 or 4 shards) and `threads` scoped threads racing on it through `body`
/// (thread number, the thread's [`rng`] state seeded from round and thread, pool, a sender and a
/// shared receiver of blocks crossing threads); blocks still in flight are dropped after the
/// scope. Returns the pool and its allocator for the checks.
fn race(
    round: u64,
    threads: u64,
    body: impl Fn(u64, &mut u64, &MemoryPool<TA>, &mpsc::Sender<G>, &Mutex<mpsc::Receiver<G>>) + Sync,
) -> (MemoryPool<TA>, TA) {
    let a = TA::default();
    let pool = MemoryPool::builder(a.clone())
        .shards(if round.is_multiple_of(2) { 1 } else { 4 })
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel::<G>();
    let rx = Mutex::new(rx);
    std::thread::scope(|sc| {
        for t in 0..threads {
            let pool = pool.clone();
            let tx = tx.clone();
            let (rx, body) = (&rx, &body);
            sc.spawn(move || body(t, &mut (round * 131 + t + 1), &pool, &tx, rx));
        }
    });
    drop(tx);
    for g in rx.lock().unwrap().try_iter() {
        drop(g);
    }
    (pool, a)
}

/// The hand-over steps the racing threads mix, by `pick`: below `allocs`, allocate `size` bytes
/// (while holding fewer than `most` blocks); `allocs`, send the newest block to another thread;
/// `allocs + 1`, drop one received; any other pick (or a full hand), drop the newest.
fn trade(
    pick: u64,
    (allocs, most): (u64, usize),
    size: usize,
    pool: &MemoryPool<TA>,
    mine: &mut Vec<G>,
    tx: &mpsc::Sender<G>,
    rx: &Mutex<mpsc::Receiver<G>>,
) {
    if pick < allocs && mine.len() < most {
        mine.push(G::new(pool.allocate(size).unwrap()));
    } else if pick == allocs {
        if let Some(b) = mine.pop() {
            tx.send(b).unwrap();
        }
    } else if pick == allocs + 1 {
        let g = rx.lock().unwrap().try_recv();
        drop(g);
    } else {
        mine.pop();
    }
}

/// Threads come and go (scoped: stats races their TLS destructors), blocks cross threads, walks
/// race allocations; quiescent figures are checked right after the scope.
#[test]
fn churn_threads_walks_and_crossing_blocks() {
    for round in 0..40u64 {
        let (pool, a) = race(round, 6, |t, s, pool, tx, rx| {
            let mut mine = Vec::new();
            for step in 0..3000 {
                let r = rng(s);
                match r % 10 {
                    7 if t == 0 && step % 50 == 0 => pool.free_held(),
                    8 if t == 1 && step % 20 == 0 => {
                        let _ = pool.stats();
                        let _ = pool.bin_stats();
                    }
                    9 if t == 2 && step % 200 == 0 => {
                        // a short-lived nested thread that caches and exits
                        let p2 = pool.clone();
                        let g = mine.pop();
                        std::thread::spawn(move || {
                            let x = G::new(p2.allocate(1000).unwrap());
                            drop(g);
                            drop(x);
                        })
                        .join()
                        .unwrap();
                    }
                    pick => trade(pick, (5, 40), sz(r >> 4), pool, &mut mine, tx, rx),
                }
            }
            if t == 3 && round % 5 == 0 {
                pool.stop_holding();
            }
        });
        quiescent(&pool, &format!("round {round}"));
        drop(pool);
        let mut waited = 0;
        while a.0.in_use.load(SeqCst) != 0 && waited < 3000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            waited += 1;
        }
        if waited > 0 {
            eprintln!("round {round}: held blocks freed only {waited} ms after the last handle/block went");
        }
        assert_eq!(
            a.0.in_use.load(SeqCst),
            0,
            "round {round}: leak after pool drop"
        );
        assert_eq!(a.0.allocs.load(SeqCst), a.0.frees.load(SeqCst));
    }
}

/// Pools dropped while blocks are out on threads that keep running, exit, or return them after.
#[test]
fn pools_dropped_while_blocks_are_out_and_threads_exit() {
    for round in 0..60u64 {
        let a = TA::default();
        let pool = MemoryPool::new(a.clone());
        let (tx, rx) = mpsc::channel::<G>();
        let barrier = Arc::new(Barrier::new(4));
        let mut hs = Vec::new();
        for t in 0..3u64 {
            let pool = pool.clone();
            let tx = tx.clone();
            let barrier = barrier.clone();
            hs.push(std::thread::spawn(move || {
                let mut s = round * 7 + t + 1;
                let mut keep = Vec::new();
                for _ in 0..200 {
                    let r = rng(&mut s);
                    let g = G::new(pool.allocate(sz(r)).unwrap());
                    match r % 3 {
                        0 => keep.push(g),
                        1 => tx.send(g).unwrap(),
                        _ => drop(g),
                    }
                }
                drop(pool); // this thread's handle goes: blocks only now
                barrier.wait();
                // the pool closes around here (main drops its handle)
                let n = keep.len() / 2;
                keep.truncate(n);
                if t == 0 {
                    return keep;
                } // returned to main, dropped after thread exit
                drop(keep);
                Vec::new()
            }));
        }
        drop(tx);
        barrier.wait();
        drop(pool);
        let mut late = Vec::new();
        for h in hs {
            late.extend(h.join().unwrap());
        }
        // drop received blocks on a new thread and here
        let got: Vec<G> = rx.try_iter().collect();
        std::thread::spawn(move || drop(got)).join().unwrap();
        drop(late);
        assert_eq!(a.0.in_use.load(SeqCst), 0, "round {round}: leak");
        assert_eq!(
            a.0.allocs.load(SeqCst),
            a.0.frees.load(SeqCst),
            "round {round}"
        );
    }
}

/// Many pools interleaved on one thread, created and dropped so addresses get reused; blocks of
/// dead-address pools outlive them; blocks of one pool dropped on threads with stale entries.
#[test]
fn interleaved_pools_and_address_reuse() {
    let (tx, rx) = mpsc::channel::<Vec<G>>();
    let other = std::thread::spawn(move || {
        // This thread uses pools of its own that die, then receives blocks of new pools at
        // (likely) the same addresses.
        for round in 0..400u64 {
            let a = TA::default();
            let p = MemoryPool::new(a.clone());
            for i in 0..5 {
                drop(G::new(
                    p.allocate(100 * i + usize::try_from(round % 3).unwrap())
                        .unwrap(),
                ));
            }
            drop(p);
            assert_eq!(a.0.in_use.load(SeqCst), 0);
            if let Ok(v) = rx.try_recv() {
                drop(v);
            }
        }
        for v in rx.iter() {
            drop(v);
        }
    });
    let mut kept = Vec::new();
    let mut allocs = Vec::new();
    for round in 0..400u64 {
        let a = TA::default();
        let b = TA::default();
        allocs.push(a.clone());
        allocs.push(b.clone());
        let p = MemoryPool::new(a.clone());
        let q = MemoryPool::new(b);
        let mut v = Vec::new();
        for i in 0..20usize {
            let g = G::new(p.allocate(i * 37 + 1).unwrap());
            let h = G::new(q.allocate(i * 37 + 1).unwrap());
            if i % 3 == 0 {
                v.push(g)
            } else if i % 3 == 1 {
                kept.push(g)
            } else {
                drop(g)
            }
            if i % 2 == 0 {
                drop(h)
            } else {
                kept.push(h)
            }
        }
        tx.send(v).unwrap();
        drop(p);
        drop(q);
        if round % 10 == 0 {
            kept.clear();
        }
    }
    drop(tx);
    other.join().unwrap();
    drop(kept);
    let leaked: Vec<usize> = allocs
        .iter()
        .map(|a| a.0.in_use.load(SeqCst))
        .filter(|&n| n != 0)
        .collect();
    assert!(leaked.is_empty(), "leaked {leaked:?}");
    for a in &allocs {
        assert_eq!(a.0.allocs.load(SeqCst), a.0.frees.load(SeqCst));
    }
}

/// Thread exits (TLS retire folding a full cache) race stats / bin_stats / free_held on the
/// main thread: with nothing else moving, every snapshot must balance exactly.
#[test]
fn stats_and_free_held_race_thread_exits() {
    for round in 0..30u64 {
        let a = TA::default();
        let pool = MemoryPool::builder(a.clone())
            .shards(if round % 2 == 0 { 1 } else { 2 })
            .build()
            .unwrap();
        let barrier = Arc::new(Barrier::new(9));
        let hs: Vec<_> = (0..8u64)
            .map(|t| {
                let pool = pool.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let mut s = round * 17 + t + 1;
                    let v: Vec<G> = (0..60)
                        .map(|_| G::new(pool.allocate(sz(rng(&mut s))).unwrap()))
                        .collect();
                    drop(v); // into this thread's cache (some overflow to shared)
                             // a few hits from the cache
                    for _ in 0..20 {
                        drop(G::new(pool.allocate(sz(rng(&mut s))).unwrap()));
                    }
                    barrier.wait();
                })
            })
            .collect();
        barrier.wait();
        let mut i = 0u32;
        while hs.iter().any(|h| !h.is_finished()) {
            let s = pool.stats();
            assert_eq!(s.active_blocks, 0, "{s:?}");
            assert_eq!(s.active_bytes, 0, "{s:?}");
            assert_eq!(s.managed_bytes, s.held_bytes, "{s:?}");
            assert_eq!(
                s.held_blocks as u64,
                s.upstream_allocations - s.upstream_frees,
                "{s:?}"
            );
            let bs = pool.bin_stats();
            assert_eq!(bs.iter().map(|b| b.active_blocks).sum::<usize>(), 0);
            i += 1;
            if round % 3 == 0 && i.is_multiple_of(4) {
                pool.free_held();
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        quiescent(&pool, &format!("exit round {round}"));
        drop(pool);
        assert_eq!(a.0.in_use.load(SeqCst), 0);
    }
}

/// Policy toggles (caches on/off), a held cap applied by set_policy and release_idle racing 24
/// threads.
#[test]
fn policy_toggles_race_allocations() {
    use cl_pool::Policy;
    for round in 0..12u64 {
        let (pool, a) = race(round, 24, |t, s, pool, tx, rx| {
            let mut mine = Vec::new();
            for step in 0..1500u32 {
                let r = rng(s);
                if t == 0 && step % 97 == 0 {
                    let p = match (r >> 3) % 4 {
                        0 => Policy::default(),
                        1 => Policy {
                            shared_bins_only: true,
                            ..Policy::default()
                        },
                        2 => Policy {
                            held_bytes_cap: Some(200_000),
                            ..Policy::default()
                        },
                        _ => Policy {
                            larger_bins: 2,
                            ..Policy::default()
                        },
                    };
                    pool.set_policy(p);
                }
                if t == 1 && step % 61 == 0 {
                    pool.set_policy(pool.policy());
                    let _ = pool.release_idle(50);
                }
                trade(r % 8, (4, 30), sz(r >> 4), pool, &mut mine, tx, rx);
            }
        });
        quiescent(&pool, &format!("toggle round {round}"));
        pool.free_held();
        settle(&pool, |p| p.allocator().0.in_use.load(SeqCst) == 0);
        assert_eq!(a.0.in_use.load(SeqCst), 0);
    }
}
